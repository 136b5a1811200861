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
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 5_000, connectTimeoutMS: 5_000, ignoreUndefined: true });
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
