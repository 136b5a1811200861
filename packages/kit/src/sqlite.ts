import { DatabaseSync, type StatementSync } from "node:sqlite";

/**
 * The embedded store: one SQLite database through Node's built-in
 * `node:sqlite` (no native add-on). Calls are synchronous, so a store method
 * that makes several statements without awaiting in between is atomic within
 * the process; `transaction` also makes it atomic on disk.
 */
export interface SqliteHandle {
  db: DatabaseSync;
  /** A prepared statement, compiled once per handle and reused (stores call the same few statements over and over). */
  prepare(sql: string): StatementSync;
  /** Runs `work` in one transaction (BEGIN IMMEDIATE … COMMIT; ROLLBACK when it throws). Nested calls join the outer one. */
  transaction<T>(work: () => T): T;
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export interface SqliteOptions {
  /**
   * Hold the database's lock from open to close (`locking_mode=EXCLUSIVE`):
   * a second process opening the same file is refused instead of sharing it.
   * The kernel drops the lock when the process dies, however it dies.
   */
  exclusive?: boolean;
}

/** Thrown by `openSqlite` with `exclusive` when another process holds the database. */
export class DatabaseInUseError extends Error {
  override name = "DatabaseInUseError";
}

/**
 * Opens (creating if need be) a database file, or `:memory:`. WAL journal
 * with `synchronous=FULL`: a commit returns only once it is on disk (the WAL
 * is fsynced), so an acknowledged write survives a crash of the process and
 * of the machine (NORMAL would survive only the process's). Measured here:
 * 160 µs a commit with FULL, 40 µs with NORMAL (docs/decisions.md).
 */
export function openSqlite(file: string, options: SqliteOptions = {}): SqliteHandle {
  const db = new DatabaseSync(file, { enableForeignKeyConstraints: true, timeout: options.exclusive ? 0 : 5_000 });
  try {
    if (options.exclusive) db.exec("PRAGMA locking_mode = EXCLUSIVE");
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = FULL");
    // A write takes the lock now and, in exclusive mode, keeps it until close.
    if (options.exclusive) db.exec("BEGIN IMMEDIATE; COMMIT");
  } catch (error) {
    db.close();
    if (options.exclusive && /locked|busy/i.test(String((error as Error).message))) {
      throw new DatabaseInUseError(`${file} is in use by another process`);
    }
    throw error;
  }
  let depth = 0;
  let open = true;
  const statements = new Map<string, StatementSync>();
  return {
    db,
    prepare(sql) {
      let statement = statements.get(sql);
      if (!statement) statements.set(sql, (statement = db.prepare(sql)));
      return statement;
    },
    transaction<T>(work: () => T): T {
      if (depth > 0) return work();
      db.exec("BEGIN IMMEDIATE");
      depth++;
      try {
        const result = work();
        db.exec("COMMIT");
        return result;
      } catch (error) {
        db.exec("ROLLBACK");
        throw error;
      } finally {
        depth--;
      }
    },
    ping: async () => open && db.isOpen,
    close: async () => {
      if (!open) return;
      open = false;
      db.close();
    },
  };
}

/**
 * A handle shared by several stores (the all-in-one keeps every service in
 * one file): each store may close its view, only the owner closes the file.
 */
export function sharedSqlite(handle: SqliteHandle): SqliteHandle {
  return { ...handle, close: async () => {} };
}

/**
 * Brings a store's tables up to date: `migrations[i]` is schema version i + 1
 * of `scope` (a service's name). Each runs once, in its own transaction with
 * the record of it, in order; they are never edited once released — a
 * change is a new one at the end. Idempotent, so it runs at every start.
 */
export function migrate(handle: SqliteHandle, scope: string, migrations: readonly string[]): void {
  handle.db.exec("CREATE TABLE IF NOT EXISTS schema_migrations (scope TEXT NOT NULL, version INTEGER NOT NULL, applied_at INTEGER NOT NULL, PRIMARY KEY (scope, version))");
  const row = handle.db.prepare("SELECT max(version) AS version FROM schema_migrations WHERE scope = ?").get(scope) as { version: number | null };
  const current = row.version ?? 0;
  if (current > migrations.length) {
    throw new Error(`the ${scope} tables are at schema version ${current}, newer than this Loom knows (${migrations.length}): run a newer Loom on this data directory`);
  }
  for (let version = current + 1; version <= migrations.length; version++) {
    handle.transaction(() => {
      handle.db.exec(migrations[version - 1]!);
      handle.db.prepare("INSERT INTO schema_migrations (scope, version, applied_at) VALUES (?, ?, ?)").run(scope, version, Date.now());
    });
  }
}

/** True when a statement failed on a UNIQUE or PRIMARY KEY constraint. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { errcode?: unknown }).errcode;
  // SQLITE_CONSTRAINT_PRIMARYKEY (1555) and SQLITE_CONSTRAINT_UNIQUE (2067).
  return code === 1555 || code === 2067;
}

/** The list order of semantics.md §4 as SQL, for tables with `created_at` (ms) and `id`: newest first, ties by id. */
export const newestFirstOrder = "created_at DESC, id DESC";

/** A row as `node:sqlite` returns it. */
export type Row = Record<string, unknown>;

/** A stored time (epoch milliseconds) back as a Date; NULL as undefined. */
export const dateOf = (ms: unknown): Date | undefined => (ms === null || ms === undefined ? undefined : new Date(Number(ms)));

/** A NULL column as an absent field. */
export const optional = <T>(value: unknown): T | undefined => (value === null || value === undefined ? undefined : (value as T));
