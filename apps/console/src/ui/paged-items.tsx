import type { ComponentChildren } from "preact";
import { ErrorNote } from "./error-note.tsx";
import { Pages } from "./pages.tsx";
import type { PagedView } from "./use-paged-list.ts";

/**
 * A list screen's body: what went wrong, or that it is loading, or that there
 * is nothing yet, or the page of items (a list named `label`, each item from
 * `item`, which renders its own `<li>`) with Previous and Next. Given a
 * `usePagedList` view: `<PagedItems {...view} label="Tools" …/>`.
 */
export function PagedItems<T>({
  label,
  page,
  error,
  empty,
  onPage,
  item,
}: PagedView<T> & {
  label: string;
  empty: string;
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
