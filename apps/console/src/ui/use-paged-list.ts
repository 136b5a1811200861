import { useCallback, useEffect, useState } from "preact/hooks";
import { messageOf, type Pagination } from "../api/request.ts";

/** Every list screen's page size: lists page through the API, never load everything. */
export const pageSize = 20;

/** What PagedItems shows: the page's items (null while loading), what went wrong, and how to turn the page. */
export interface PagedView<T> {
  page: { items: T[]; pagination: Pagination } | null;
  error: string | null;
  onPage: (page: number) => void;
}

/**
 * A list the API pages, whose answers hold the page's items under `key`
 * (`tools`, `assistants`…) beside `pagination`. `fetchPage` is called again
 * when it changes (list its inputs in `deps`) or the page does; `ready: false`
 * waits (an input not yet known). `view` goes to PagedItems whole
 * (`<PagedItems {...view} …/>`); `reload` shows page 1 afresh, where a new
 * item appears; `load` the same page again.
 */
export function usePagedList<K extends string, T>(
  key: K,
  fetchPage: (page: number, pageSize: number) => Promise<{ [k in K]: T[] } & { pagination: Pagination }>,
  deps: unknown[],
  { ready = true }: { ready?: boolean } = {},
) {
  const [page, setPage] = useState(1);
  const [list, setList] = useState<{ items: T[]; pagination: Pagination } | null>(null);
  const [error, setError] = useState<string | null>(null);

  // fetchPage is rebuilt each render: `deps` names what it reads.
  const load = useCallback(async () => {
    if (!ready) return;
    setError(null);
    try {
      const answer = await fetchPage(page, pageSize);
      setList({ items: answer[key], pagination: answer.pagination });
    } catch (e) {
      setError(messageOf(e));
    }
  }, [page, ready, ...deps]);
  useEffect(() => void load(), [load]);

  const reload = () => {
    if (page === 1) void load();
    else setPage(1);
  };
  const view: PagedView<T> = { page: list, error, onPage: setPage };
  return { view, items: list?.items, load, reload };
}
