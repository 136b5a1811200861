import { MongoClient, type Db } from "mongodb";

export interface MongoHandle {
  client: MongoClient;
  db: Db;
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Connects to MongoDB (or anything that speaks its wire protocol) and picks
 * the service's own database. Fails fast when the server does not answer.
 */
export async function connectMongo(url: string, dbName: string): Promise<MongoHandle> {
  // ignoreUndefined: an absent optional field is left out of the document, so
  // partial indexes and `$exists` queries see it as absent.
  // socketTimeoutMS: a server that stops answering with the connection open
  // (frozen, partitioned) fails a call after 10 s (UNAVAILABLE) instead of
  // holding it forever; no call of Loom's waits on the server that long.
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 5_000, connectTimeoutMS: 5_000, socketTimeoutMS: 10_000, ignoreUndefined: true });
  await client.connect();
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

/** The list order of semantics.md §4 as a MongoDB sort: newest first, ties by id. */
export const newestFirstSort = { createdAt: -1, _id: -1 } as const;
