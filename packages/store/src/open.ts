import type { MongoHandle } from "./mongo.ts";
import { type Acknowledgements, groupCommitted, openSqlite, type SqliteHandle } from "./sqlite.ts";

/** Where a service keeps its data: MongoDB when a URL is given, else SQLite. */
export interface StoreSettings {
  url?: string | undefined;
  db: string;
  /**
   * The SQLite database to keep it in without a URL (the all-in-one process
   * shares one file among its services: `sharedSqlite`); a private
   * in-memory database when absent.
   */
  sqlite?: SqliteHandle | undefined;
}

/**
 * Opens a service's store through the adapter its settings name. Every
 * service has the same two adapters behind its store port, so this is the
 * one place that chooses between them. The MongoDB driver and adapters are
 * imported only when a URL is given (docs/decisions.md, "Loading only what is used").
 */
export async function openStore<S extends object>(
  settings: StoreSettings,
  adapters: { sqlite: (handle: SqliteHandle) => S; mongo: (handle: MongoHandle) => S | Promise<S> },
  acknowledge: Acknowledgements<S> = "each call",
): Promise<S> {
  if (settings.url) {
    const { connectMongo } = await import("./mongo.ts");
    return adapters.mongo(await connectMongo(settings.url, settings.db));
  }
  const handle = settings.sqlite ?? openSqlite(":memory:");
  return groupCommitted(handle, adapters.sqlite(handle), acknowledge);
}

/** What every store port has besides its own business: set up (tables or indexes, idempotent), a readiness probe, and close. */
export interface StoreLifecycle {
  init(): Promise<void>;
  ready(): Promise<boolean>;
  close(): Promise<void>;
}
