import { randomBytes } from "node:crypto";
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, writeFileSync, writeSync } from "node:fs";
import { join, resolve } from "node:path";
import { StartupRefused } from "@loom/runtime/shutdown";
import { DatabaseInUseError, openSqlite, type SqliteHandle } from "@loom/store/sqlite";
import type { Logger } from "@loom/telemetry/logger";

/** The all-in-one process's data directory (LOOM_DATA_DIR): its database, its blobs, its keys. */
export interface DataDir {
  /** Absolute. */
  path: string;
  /** `new`: this start made the database; `reopened`: it was there. */
  state: "new" | "reopened";
  /** Every service's tables, in one file (`loom.db`); absent when the records live in MongoDB. */
  sqlite?: SqliteHandle;
  /** The key that signs asset URLs, kept so URLs outlive a restart (BLOB_SIGNING_KEY overrides it). */
  signingKey: string;
  /** The key that seals secret values, in base64 (SECRETS_KEY overrides it; docs/decisions.md, "Secrets"). */
  secretsKey: string;
  blobDir: string;
  close(): Promise<void>;
}

/** Another process holds the data directory (a running Loom). */
export class DataDirInUse extends StartupRefused {
  override name = "DataDirInUse";
  /** Of the process that holds it, as it wrote it in `loom.pid`; "" when unknown. */
  readonly pid: string;
  constructor(path: string, pid: string) {
    super(
      `the data directory ${path} is in use by another Loom process${pid ? ` (pid ${pid})` : ""}: stop that one, or set LOOM_DATA_DIR to another directory`,
    );
    this.pid = pid;
  }
}

/**
 * Opens (creating) the data directory. With `records`, the services' records
 * go into `loom.db` there. The directory is held for the life of the process
 * by the exclusive lock of a second, empty database, `loom.lock`: a second
 * Loom on the same directory is refused, with the pid of the one that holds
 * it (`loom.pid`, written once the lock is ours), while `loom.db` itself
 * stays readable by other programs (an online backup).
 */
export function openDataDir(dir: string, options: { records: boolean; logger?: Logger }): DataDir {
  const path = resolve(dir);
  try {
    mkdirSync(path, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new StartupRefused(`LOOM_DATA_DIR: cannot make the data directory ${path}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const database = join(path, "loom.db");
  const pidFile = join(path, "loom.pid");
  const existed = options.records ? existsSync(database) : existsSync(join(path, "signing-key"));
  let sqlite: SqliteHandle | undefined;
  let lock: SqliteHandle | undefined;
  if (options.records) {
    try {
      lock = openSqlite(join(path, "loom.lock"), { exclusive: true });
    } catch (error) {
      if (!(error instanceof DatabaseInUseError)) throw error;
      throw new DataDirInUse(path, existsSync(pidFile) ? readFileSync(pidFile, "utf8").trim() : "");
    }
    writeFileSync(pidFile, `${process.pid}\n`);
    sqlite = openSqlite(database, options.logger ? { logger: options.logger } : {});
  }
  return {
    path,
    state: existed ? "reopened" : "new",
    ...(sqlite ? { sqlite } : {}),
    signingKey: keptKey(join(path, "signing-key"), "base64url"),
    secretsKey: keptKey(join(path, "secrets-key"), "base64"),
    blobDir: join(path, "blobs"),
    close: async () => {
      await sqlite?.close();
      await lock?.close();
    },
  };
}

/** Read, or made once (256 random bits, readable by the owner only, on disk before it signs or seals anything). */
function keptKey(file: string, encoding: "base64" | "base64url"): string {
  if (!existsSync(file)) {
    try {
      const fd = openSync(file, "wx", 0o600);
      writeSync(fd, `${randomBytes(32).toString(encoding)}\n`);
      fsyncSync(fd);
      closeSync(fd);
    } catch (error) {
      // Another process (sharing MongoDB, so not locked out) made it first: use theirs.
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
  }
  return readFileSync(file, "utf8").trim();
}
