import type { ComponentChildren } from "preact";
import type { Pagination } from "../api/request.ts";
import { ErrorNote } from "./error-note.tsx";
import { Pages } from "./pages.tsx";

/**
 * A list screen's body: what went wrong, or that it is loading, or that there
 * is nothing yet, or the page of items (a list named `label`, each item from
 * `item`, which renders its own `<li>`) with Previous and Next.
 */
export function PagedItems<T>({
  label,
  page,
  error,
  empty,
  onPage,
  item,
}: {
  label: string;
  page: { items: T[]; pagination: Pagination } | null;
  error: string | null;
  empty: string;
  onPage: (page: number) => void;
  item: (value: T) => ComponentChildren;
}) {
  return (
    <>
      <ErrorNote error={error} />
      {!page && !error && <p>Loading {label.toLowerCase()}…</p>}
      {page && page.items.length === 0 && <p>{empty}</p>}
      {page && page.items.length > 0 && (
        <>
          <ul class="items" aria-label={label}>
            {page.items.map(item)}
          </ul>
          <Pages label={`Pages of ${label.toLowerCase()}`} pagination={page.pagination} onPage={onPage} />
        </>
      )}
    </>
  );
}
