import { useCallback, useEffect, useState } from "preact/hooks";
import { messageOf } from "../api/request.ts";

/** Every list screen's page size: lists page through the API, never load everything. */
export const pageSize = 20;

/**
 * A list the API pages: which page is shown, that page once loaded, and what
 * went wrong loading it. `fetchPage` is called again when it changes (list its
 * inputs in `deps`) or the page does; `null` from `ready` waits (an input not
 * yet known). `reload` shows page 1 afresh, where a new item appears.
 */
export function usePagedList<T>(
  fetchPage: (page: number, pageSize: number) => Promise<T>,
  deps: unknown[],
  ready = true,
) {
  const [page, setPage] = useState(1);
  const [list, setList] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);

  // fetchPage is rebuilt each render: `deps` names what it reads.
  const load = useCallback(async () => {
    if (!ready) return;
    setError(null);
    try {
      setList(await fetchPage(page, pageSize));
    } catch (e) {
      setError(messageOf(e));
    }
  }, [page, ready, ...deps]);
  useEffect(() => void load(), [load]);

  const reload = () => {
    if (page === 1) void load();
    else setPage(1);
  };
  return { list, error, setPage, load, reload };
}
