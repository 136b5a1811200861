/**
 * `load`, called on first use and its promise kept: a process imports an SDK (the AI SDK, the MCP client, the
 * MongoDB driver) only once something uses it, so the all-in-one on SQLite with the offline model never holds them
 * (docs/decisions.md, "Loading only what is used"). A failed load is retried on the next use.
 */
export function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () =>
    (loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw error;
    }));
}
