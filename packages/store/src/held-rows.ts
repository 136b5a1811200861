import type { SqliteHandle } from "./sqlite.ts";

/**
 * Rows a SQLite store keeps in memory beside its tables, written through by
 * its own calls (the database is this process's alone, so every write to
 * them passes through the store): at most `limit` (holding one more forgets
 * them all, so memory follows what is in use, not history), and none once
 * writes are undone (`SqliteHandle.afterRollback`), to be read again.
 */
export interface HeldRows<Row> {
  get(key: string): Row | undefined;
  hold(key: string, row: Row): void;
  forget(key: string): void;
}

export function heldRows<Row>(handle: SqliteHandle, limit: number): HeldRows<Row> {
  const rows = new Map<string, Row>();
  handle.afterRollback(() => rows.clear());
  return {
    get: (key) => rows.get(key),
    hold(key, row) {
      if (rows.size >= limit) rows.clear();
      rows.set(key, row);
    },
    forget: (key) => void rows.delete(key),
  };
}
