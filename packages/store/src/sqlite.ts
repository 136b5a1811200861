import { DatabaseSync, type StatementSync } from "node:sqlite";
import { DependencyDown } from "@loom/runtime/dependency-down";
import { StartupRefused } from "@loom/runtime/shutdown";
import type { Logger } from "@loom/telemetry/logger";
import { load as loadSqliteVec } from "sqlite-vec";
import { type CheckpointResult, checkpointOffThread } from "./wal-checkpointer.ts";
import { walSync } from "./wal-sync.ts";

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
  /**
   * Runs `work` atomically: in its own transaction (BEGIN IMMEDIATE … COMMIT),
   * or, inside one already open (a commit group, an outer call), as a
   * savepoint; all of it undone when it throws.
   */
  transaction<T>(work: () => T): T;
  /**
   * Group commit: runs a store call inside the transaction that every store
   * call of this turn of the event loop shares, and resolves only once that
   * transaction is committed (one fsync for all of them, when the turn
   * ends, or when the previous group's sync ends if it still runs then).
   * An acknowledged write is on disk; a read returns nothing that is not.
   * The transaction begins at the turn's first write: reads before it run
   * outside one, and a turn that only reads begins none (nor commits).
   */
  inCommitGroup<T>(call: () => Promise<T>): Promise<T>;
  /**
   * Runs a store call inside this turn's transaction, like `inCommitGroup`,
   * but resolves as soon as the call has: its writes are acknowledged later,
   * by `durable()`. For a service whose own steps need not wait for the disk
   * (the runs worker's), provided it awaits `durable()` before anything
   * leaves it.
   */
  inGroup<T>(call: () => Promise<T>): Promise<T>;
  /** Resolves once every write made so far is committed and on disk. */
  durable(): Promise<void>;
  /**
   * Calls `listener` whenever writes are undone (a failed call's savepoint, a
   * transaction or commit group rolled back, the database failed): for what
   * a store holds beside its tables, which must then be forgotten.
   */
  afterRollback(listener: () => void): void;
  /** Calls `listener` once, when the database fails (`DatabaseFailed`): for the process to say so. */
  afterFailure(listener: (failure: DatabaseFailed) => void): void;
  /**
   * Checkpoints the WAL now, on the checkpointing thread (it runs every half
   * second anyway); nothing to do for `:memory:`.
   */
  checkpoint(): Promise<CheckpointResult>;
  ping(): Promise<boolean>;
  close(): Promise<void>;
  /** Where migrations say what they did (`SqliteOptions.logger`). */
  logger?: Logger;
}

export interface SqliteOptions {
  /**
   * Hold the database's lock from open to close (`locking_mode=EXCLUSIVE`):
   * a second process opening the same file is refused instead of sharing it.
   * The kernel drops the lock when the process dies, however it dies.
   */
  exclusive?: boolean;
  /** Logs each migration that runs on this database, one line each; none when absent (a fresh in-memory database). */
  logger?: Logger;
}

/**
 * What every call of a handle fails with once its database has failed: a WAL
 * sync failed, a COMMIT failed, or SQLite undid a transaction on its own (a
 * statement's SQLITE_FULL or SQLITE_IOERR). Nothing is acknowledged, written
 * or read through the handle after that; the process stays up, answers 503
 * and is not ready, and a restart recovers the database from its WAL
 * (docs/decisions.md, "The embedded store"). The original error is the cause.
 */
export class DatabaseFailed extends DependencyDown {
  override name = "DatabaseFailed";
  constructor(cause: unknown) {
    super("the database", { cause });
    this.message =
      "the database failed: nothing more is written until the process restarts and recovers it from its log";
  }
}

/** Thrown by `openSqlite` with `exclusive` when another process holds the database. */
export class DatabaseInUseError extends Error {
  override name = "DatabaseInUseError";
}

const transactionControl = [
  "BEGIN IMMEDIATE",
  "COMMIT",
  "ROLLBACK",
  "SAVEPOINT loom_work",
  "RELEASE loom_work",
  "ROLLBACK TO loom_work",
] as const;

/**
 * Opens (creating if need be) a database file, or `:memory:`. WAL journal
 * with `synchronous=NORMAL`, and every commit group waits for an fdatasync
 * of the WAL that `walSync` runs on the thread pool: an acknowledged write
 * survives a crash of the process and of the machine, as with FULL, but the
 * event loop does not stop while the disk flushes (with FULL, the fsync
 * inside COMMIT took a fifth of the all-in-one's main thread under load:
 * docs/decisions.md). The commit group (`inCommitGroup`) spreads one sync
 * over every call of a turn. A failed sync or log write fails the handle for
 * good (`DatabaseFailed`): nothing is acknowledged after it. sqlite-vec is
 * loaded into every connection (its `vec0` tables: docs/decisions.md,
 * "Knowledge index"), and loading any other extension is then turned off.
 */
export function openSqlite(file: string, options: SqliteOptions = {}): SqliteHandle {
  const db = new DatabaseSync(file, {
    enableForeignKeyConstraints: true,
    timeout: options.exclusive ? 0 : 5_000,
    allowExtension: true,
  });
  try {
    // sqlite-vec's vector tables (the knowledge index's); no other extension is ever loaded, by a call or by SQL.
    loadSqliteVec(db);
    db.enableLoadExtension(false);
    if (options.exclusive) db.exec("PRAGMA locking_mode = EXCLUSIVE");
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
    // A write takes the lock now and, in exclusive mode, keeps it until close.
    if (options.exclusive) db.exec("BEGIN IMMEDIATE; COMMIT");
  } catch (error) {
    db.close();
    if (options.exclusive && /locked|busy/i.test(String((error as Error).message))) {
      throw new DatabaseInUseError(`${file} is in use by another process`);
    }
    throw error;
  }
  const wal = file === ":memory:" ? undefined : walSync(`${file}-wal`);
  // Checkpoints off the event loop (wal-checkpointer.ts); an exclusive database admits no second connection, and is not written to.
  const checkpointer = file === ":memory:" || options.exclusive ? undefined : checkpointOffThread(file);
  if (checkpointer) db.exec("PRAGMA wal_autocheckpoint = 0");
  // Transaction control as prepared statements: `exec` parses its SQL on every call (a few µs, many times a run).
  const control = new Map(transactionControl.map((sql) => [sql, db.prepare(sql)]));
  const run = (sql: (typeof transactionControl)[number]) => void control.get(sql)!.run();
  let depth = 0;
  let open = true;
  /** Set when the database fails (see `DatabaseFailed`): from then on every call fails and the probe says not ready. */
  let failure: DatabaseFailed | undefined;
  const failureListeners: Array<(failure: DatabaseFailed) => void> = [];
  /** The last group's commit and sync: groups end in order, so it covers every earlier one. */
  let lastCommitted: Promise<void> = Promise.resolve();
  /** Whether a committed group's WAL sync is running: the open group then waits for it to end before it commits. */
  let syncing = false;
  const statements = new Map<string, StatementSync>();
  const rollbackListeners: Array<() => void> = [];
  const rolledBack = () => {
    for (const listener of rollbackListeners) listener();
  };
  interface Group {
    committed: Promise<void>;
    /** Resolves `committed` (or rejects it, with an error). */
    settle(error?: unknown): void;
    earlier: Promise<void>;
    /** Set when a writing statement runs while it is open (even one that changed nothing, or was undone: it then waits for a sync it did not need). */
    wrote: boolean;
    /** Whether its turn has ended (or the handle closes): it commits as soon as no sync runs. */
    due: boolean;
    /** Whether its transaction has begun: at its first write (reads before it need none, and a group that only reads never begins one). */
    begun: boolean;
    commit(): void;
  }
  let group: Group | undefined;
  /**
   * Fails the database for good (see `DatabaseFailed`), once: the open
   * group's transaction is undone if SQLite has not already (nothing of it
   * may reach the disk) and its calls fail, held rows are forgotten, and the
   * checkpoints stop, so that the WAL stays as it is for the recovery at the
   * next start. Returns the error every call gets from then on.
   */
  const fail = (cause: unknown): DatabaseFailed => {
    if (failure) return failure;
    failure = new DatabaseFailed(cause);
    if (db.isTransaction) {
      try {
        run("ROLLBACK");
      } catch {
        // The connection is closing (or SQLite undid it meanwhile): nothing of the group is committed either way.
      }
    }
    const lost = group;
    group = undefined;
    lost?.settle(failure);
    rolledBack();
    void checkpointer?.close().catch(() => {});
    for (const listener of failureListeners) listener(failure);
    return failure;
  };
  /**
   * A statement's error as its caller gets it: when SQLite undid the whole
   * transaction with it (SQLITE_FULL, SQLITE_IOERR), every write of the
   * group is gone, not only the statement's, and the database has failed.
   */
  const statementError = (error: unknown): unknown =>
    failure || (depth > 0 && !db.isTransaction) ? fail(error) : error;
  /** Whether a group has written nothing so far: every write made is then in the groups before it. */
  const wroteNothing = (opened: Group) => !opened.wrote;
  /**
   * Commits the group now or, if a sync is running, when that sync ends
   * (`commit` waits while one runs; the sync's end commits a due group):
   * while the disk flushes, writes gather in the open group, so the busier
   * the process, the larger each commit and the fewer of them (each COMMIT
   * writes every page it changed).
   */
  const commitWhenIdle = (opened: Group) => {
    opened.due = true;
    opened.commit();
  };
  /**
   * Begins the group's transaction, if it has not yet: before its first
   * write. If SQLite has undone it meanwhile (an error nobody reported), the
   * write would run in autocommit, unsynced: the database has failed instead.
   */
  const begin = (opened: Group) => {
    if (opened.begun) {
      if (!db.isTransaction) throw fail(new Error("SQLite undid the commit group's transaction"));
      return;
    }
    run("BEGIN IMMEDIATE");
    depth++;
    opened.begun = true;
  };
  const openGroup = () => {
    if (group) return group;
    // A group that writes nothing has nothing to sync: it waits only for the groups before it (what it read may be theirs).
    const earlier = lastCommitted;
    let settle!: (error?: unknown) => void;
    const committed = new Promise<void>(
      (resolve, reject) => (settle = (error) => (error === undefined ? resolve() : reject(error))),
    );
    committed.catch(() => {}); // each waiting call sees the failure; nobody else needs to
    const opened: Group = {
      committed,
      settle: (error) => settle(error),
      earlier,
      wrote: false,
      due: false,
      begun: false,
      commit() {
        if (group !== opened) return;
        // Reads only, outside any transaction: nothing to commit, nor to wait for a running sync to end.
        if (!opened.begun) {
          group = undefined;
          return void earlier.then(() => settle(), settle);
        }
        if (syncing) return;
        group = undefined;
        depth--;
        try {
          // Gone already if SQLite undid it and nobody saw (a failed read's IOERR): a COMMIT would fail anyway.
          if (!db.isTransaction) throw new Error("SQLite undid the commit group's transaction");
          run("COMMIT");
        } catch (error) {
          // A failed COMMIT is a WAL write that failed (SQLITE_FULL, SQLITE_IOERR): SQLite has undone the group.
          return settle(fail(error));
        }
        if (!wal) return settle();
        if (wroteNothing(opened)) return void earlier.then(() => settle(), settle);
        syncing = true;
        wal
          .synced()
          .then(
            () => settle(),
            // After a failed fsync the kernel may have dropped the pages: nothing later can be trusted either.
            (error: unknown) => settle(fail(error)),
          )
          .finally(() => {
            syncing = false;
            if (group?.due) group.commit();
          });
      },
    };
    setImmediate(() => commitWhenIdle(opened));
    lastCommitted = committed;
    return (group = opened);
  };
  /**
   * A writing statement that marks the open group as written when it runs
   * (asking SQLite for its change count instead costs a statement each time
   * a read or a commit needs to know). Stores write only through `prepare`,
   * and call `run`, `get` and `all`.
   */
  const writing = (statement: StatementSync): StatementSync => {
    const wrote = () => {
      // A call still running when the database failed writes nothing more (outside a group, it would autocommit).
      if (failure) throw failure;
      if (!group) return;
      begin(group);
      group.wrote = true;
    };
    /** A statement call that first marks the group written, and fails the database when SQLite undid the group with it. */
    const guarded =
      <A extends unknown[], R>(call: (...params: A) => R) =>
      (...params: A): R => {
        wrote();
        try {
          return call(...params);
        } catch (error) {
          throw statementError(error);
        }
      };
    return {
      run: guarded((...params: Parameters<StatementSync["run"]>) => statement.run(...params)),
      get: guarded((...params: Parameters<StatementSync["get"]>) => statement.get(...params)),
      all: guarded((...params: Parameters<StatementSync["all"]>) => statement.all(...params)),
    } as StatementSync;
  };
  /** What a caller waits for to know every write so far is on disk. */
  const durable = (): Promise<void> => {
    if (failure) return Promise.reject(failure);
    if (!group) return lastCommitted;
    if (wroteNothing(group)) return group.earlier;
    return group.committed;
  };
  return {
    db,
    ...(options.logger ? { logger: options.logger } : {}),
    prepare(sql) {
      let statement = statements.get(sql);
      if (!statement)
        statements.set(sql, (statement = /^\s*SELECT\b/i.test(sql) ? db.prepare(sql) : writing(db.prepare(sql))));
      return statement;
    },
    transaction<T>(work: () => T): T {
      if (failure) throw failure;
      if (group) begin(group);
      if (depth > 0) {
        run("SAVEPOINT loom_work");
        try {
          const result = work();
          run("RELEASE loom_work");
          return result;
        } catch (error) {
          // Undone whole by SQLite (SQLITE_FULL, SQLITE_IOERR), the savepoint with it: the group's other writes are gone too.
          if (failure || !db.isTransaction) throw fail(error);
          run("ROLLBACK TO loom_work");
          run("RELEASE loom_work");
          rolledBack();
          throw error;
        }
      }
      run("BEGIN IMMEDIATE");
      depth++;
      try {
        const result = work();
        run("COMMIT");
        return result;
      } catch (error) {
        if (failure || !db.isTransaction) throw fail(error);
        run("ROLLBACK");
        rolledBack();
        throw error;
      } finally {
        depth--;
      }
    },
    async inCommitGroup<T>(call: () => Promise<T>): Promise<T> {
      if (failure) throw failure;
      openGroup();
      const result = await call();
      // Everything written so far, which covers what the call wrote and anything it read.
      await durable();
      return result;
    },
    inGroup<T>(call: () => Promise<T>): Promise<T> {
      if (failure) return Promise.reject(failure);
      openGroup();
      return call();
    },
    durable,
    afterRollback: (listener) => void rollbackListeners.push(listener),
    afterFailure: (listener) => void failureListeners.push(listener),
    checkpoint: () =>
      failure ? Promise.reject(failure) : (checkpointer?.checkpoint() ?? Promise.resolve({ log: 0, checkpointed: 0 })),
    ping: async () => open && db.isOpen && failure === undefined,
    close: async () => {
      if (!open) return;
      open = false;
      if (group) commitWhenIdle(group);
      await lastCommitted.catch(() => {});
      await wal?.close();
      await checkpointer?.close();
      db.close();
    },
  };
}

/**
 * When a store's calls are acknowledged: `"each call"` resolves every call
 * only once its group is committed and synced; `"by durable()"` resolves
 * calls at once and leaves the wait to the store's `durable()`, which its
 * service awaits before answering (docs/decisions.md, "The embedded store").
 */
export type Acknowledgement = "each call" | "by durable()";

/** One acknowledgement for every call of a store, or one per method (a method not named: "each call"). */
export type Acknowledgements<S> = Acknowledgement | Partial<Record<keyof S & string, Acknowledgement>>;

/**
 * A store whose every call runs in the handle's commit group (the ports'
 * lifecycle included): what `openStore` gives the services on SQLite.
 */
export function groupCommitted<S extends object>(
  handle: SqliteHandle,
  store: S,
  acknowledge: Acknowledgements<S> = "each call",
): S {
  const wrapped = { ...store } as Record<string, unknown>;
  for (const [name, member] of Object.entries(store)) {
    if (typeof member !== "function" || name === "close" || name === "durable") continue;
    const call = member as (...a: unknown[]) => Promise<unknown>;
    const mode =
      typeof acknowledge === "string"
        ? acknowledge
        : ((acknowledge as Record<string, Acknowledgement | undefined>)[name] ?? "each call");
    wrapped[name] =
      mode === "each call"
        ? (...args: unknown[]) => handle.inCommitGroup(() => call(...args))
        : (...args: unknown[]) => handle.inGroup(() => call(...args));
  }
  return wrapped as S;
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
  handle.db.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (scope TEXT NOT NULL, version INTEGER NOT NULL, applied_at INTEGER NOT NULL, PRIMARY KEY (scope, version))",
  );
  const row = handle.db.prepare("SELECT max(version) AS version FROM schema_migrations WHERE scope = ?").get(scope) as {
    version: number | null;
  };
  const current = row.version ?? 0;
  const file = handle.db.location() ?? ":memory:";
  if (current > migrations.length) {
    throw new StartupRefused(
      `${file}: the ${scope} tables are at schema version ${current}, newer than this Loom knows (${migrations.length}): run a newer Loom on this data directory`,
    );
  }
  for (let version = current + 1; version <= migrations.length; version++) {
    handle.transaction(() => {
      handle.db.exec(migrations[version - 1]!);
      handle.db
        .prepare("INSERT INTO schema_migrations (scope, version, applied_at) VALUES (?, ?, ?)")
        .run(scope, version, Date.now());
    });
    handle.logger?.info(
      { file, scope, version },
      `migrated the ${scope} tables to schema version ${version} of ${migrations.length}`,
    );
  }
}

/** True when a statement failed on a UNIQUE or PRIMARY KEY constraint. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { errcode?: unknown }).errcode;
  // SQLITE_CONSTRAINT_PRIMARYKEY (1555) and SQLITE_CONSTRAINT_UNIQUE (2067).
  return code === 1555 || code === 2067;
}

/** The list order of docs/behaviour.md §4 as SQL, for tables with `created_at` (ms) and `id`: newest first, ties by id. */
export const newestFirstOrder = "created_at DESC, id DESC";

/** A row as `node:sqlite` returns it. */
export type Row = Record<string, unknown>;

/** A stored time (epoch milliseconds) back as a Date; NULL as undefined. */
export const dateOf = (ms: unknown): Date | undefined =>
  ms === null || ms === undefined ? undefined : new Date(Number(ms));

/** A NULL column as an absent field. */
export const optional = <T>(value: unknown): T | undefined =>
  value === null || value === undefined ? undefined : (value as T);

/** A SQLite store's lifecycle (the ports' `StoreLifecycle`): its migrations at init, the handle's probe and close. */
export function sqliteLifecycle(handle: SqliteHandle, scope: string, migrations: readonly string[]) {
  return {
    init: async (): Promise<void> => migrate(handle, scope, migrations),
    ready: handle.ping,
    close: handle.close,
  };
}
