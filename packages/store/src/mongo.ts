import { StartupRefused } from "@loom/runtime/shutdown";
import { type Db, MongoClient, type MongoClientOptions, MongoServerSelectionError } from "mongodb";

export interface MongoHandle {
  client: MongoClient;
  db: Db;
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Loom's timeouts, each unless the URL sets its own (options given to the
 * driver beside the URL would override the URL's). socketTimeoutMS: a server
 * that stops answering with the connection open (frozen, partitioned) fails
 * a call after 10 s (UNAVAILABLE) instead of holding it forever; no call of
 * Loom's waits on the server that long.
 */
const defaultTimeouts = { serverSelectionTimeoutMS: 5_000, connectTimeoutMS: 5_000, socketTimeoutMS: 10_000 } as const;

/** The URL's own options, by name as the driver spells them (it matches them case-insensitively). */
function setInUrl(url: string, option: string): boolean {
  const query = url.split("?")[1] ?? "";
  return query.split("&").some((pair) => pair.split("=")[0]!.toLowerCase() === option.toLowerCase());
}

/**
 * Connects to MongoDB (or anything that speaks its wire protocol) and picks
 * the service's own database. Fails fast when the server does not answer,
 * with one sentence naming MONGODB_URL and where it points (never its credentials).
 */
export async function connectMongo(url: string, dbName: string): Promise<MongoHandle> {
  const options: MongoClientOptions = {
    // An absent optional field is left out of the document, so partial indexes and `$exists` queries see it as absent.
    ignoreUndefined: true,
    ...Object.fromEntries(Object.entries(defaultTimeouts).filter(([option]) => !setInUrl(url, option))),
  };
  const client = new MongoClient(url, options);
  try {
    await client.connect();
  } catch (error) {
    await client.close().catch(() => {});
    const hosts = client.options.hosts.map(String).join(",");
    const reason = error instanceof Error ? error.message : String(error);
    throw new StartupRefused(
      error instanceof MongoServerSelectionError
        ? `MONGODB_URL: no MongoDB server answered at ${hosts} within ${client.options.serverSelectionTimeoutMS} ms (${reason})`
        : `MONGODB_URL: cannot connect to MongoDB at ${hosts}: ${reason}`,
      { cause: error },
    );
  }
  const db = client.db(dbName);
  return {
    client,
    db,
    ping: async () => {
      try {
        await db.command({ ping: 1 });
        return true;
      } catch {
        return false;
      }
    },
    close: () => client.close(),
  };
}

/** True when a write failed on a unique index. */
export function isDuplicateKey(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === 11000;
}

/** A record as stored: its public UUID is `_id`. */
export type Doc<T extends { id: string }> = Omit<T, "id"> & { _id: string };

export function toDoc<T extends { id: string }>({ id, ...rest }: T): Doc<T> {
  return { _id: id, ...rest } as Doc<T>;
}

export function fromDoc<T extends { id: string }>(doc: Doc<T> | null): T | undefined {
  if (!doc) return undefined;
  const { _id, ...rest } = doc;
  return { id: _id, ...rest } as unknown as T;
}

/** The list order of docs/behaviour.md §4 as a MongoDB sort: newest first, ties by id. */
export const newestFirstSort = { createdAt: -1, _id: -1 } as const;
