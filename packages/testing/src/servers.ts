import { randomBytes } from "node:crypto";
import { MongoClient } from "mongodb";

/** The real test servers, when the environment names them (.ci/run does). */
export const testServers = {
  mongoUrl: process.env.MONGODB_URL || undefined,
  natsUrl: process.env.NATS_URL || undefined,
};

/**
 * Says out loud that a suite does not run, and why; use with
 * `describe.skipIf(!needs("MONGODB_URL", "identity store on MongoDB"))`.
 */
export function needs(variable: "MONGODB_URL" | "NATS_URL", suite: string): boolean {
  const present = variable === "MONGODB_URL" ? testServers.mongoUrl : testServers.natsUrl;
  if (!present) console.warn(`SKIPPED: ${suite} — ${variable} is not set (see README, "Test servers")`);
  return Boolean(present);
}

/** Store kinds every store-backed suite runs against: memory always, MongoDB when there is one. */
export function storeKinds(suite: string): Array<"memory" | "mongo"> {
  return needs("MONGODB_URL", `${suite} on MongoDB`) ? ["memory", "mongo"] : ["memory"];
}

/** A database of its own for one suite, dropped afterwards. */
export function freshDatabaseName(prefix = "loom_test"): string {
  return `${prefix}_${randomBytes(6).toString("hex")}`;
}

export async function dropDatabase(url: string, name: string): Promise<void> {
  const client = new MongoClient(url, { serverSelectionTimeoutMS: 5_000 });
  try {
    await client.connect();
    await client.db(name).dropDatabase();
  } finally {
    await client.close();
  }
}
