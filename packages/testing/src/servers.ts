import { randomBytes } from "node:crypto";
import { MongoClient } from "mongodb";

/** The real test servers, when the environment names them (.ci/run does). */
export const testServers = {
  mongoUrl: process.env.MONGODB_URL || undefined,
  natsUrl: process.env.NATS_URL || undefined,
  /** An S3-compatible server (MinIO in CI) and its root credentials: tests make buckets of their own (`freshS3Bucket`). */
  s3:
    process.env.S3_TEST_ENDPOINT && process.env.S3_TEST_ACCESS_KEY_ID && process.env.S3_TEST_SECRET_ACCESS_KEY
      ? {
          endpoint: process.env.S3_TEST_ENDPOINT,
          accessKeyId: process.env.S3_TEST_ACCESS_KEY_ID,
          secretAccessKey: process.env.S3_TEST_SECRET_ACCESS_KEY,
        }
      : undefined,
  /** stripe-mock (stateless: any id retrieves, list filters are ignored), for billing against the real SDK and API shapes. */
  stripeMockUrl: process.env.STRIPE_MOCK_URL || undefined,
};

type TestServerVariable = "MONGODB_URL" | "NATS_URL" | "S3_TEST_ENDPOINT" | "STRIPE_MOCK_URL";

const present: Record<TestServerVariable, () => boolean> = {
  MONGODB_URL: () => Boolean(testServers.mongoUrl),
  NATS_URL: () => Boolean(testServers.natsUrl),
  // The endpoint names the server; its two credentials come with it.
  S3_TEST_ENDPOINT: () => Boolean(testServers.s3),
  STRIPE_MOCK_URL: () => Boolean(testServers.stripeMockUrl),
};

/**
 * Says out loud that a suite does not run, and why; use with
 * `describe.skipIf(!needs("MONGODB_URL", "identity store on MongoDB"))`.
 */
export function needs(variable: TestServerVariable, suite: string): boolean {
  const ok = present[variable]();
  if (!ok) {
    const what =
      variable === "S3_TEST_ENDPOINT"
        ? "S3_TEST_ENDPOINT (with S3_TEST_ACCESS_KEY_ID, S3_TEST_SECRET_ACCESS_KEY)"
        : variable;
    console.warn(`SKIPPED: ${suite} — ${what} is not set (see README, "Test servers")`);
  }
  return ok;
}

/** Store kinds every store-backed suite runs against: SQLite (in memory) always, MongoDB when there is one. */
export function storeKinds(suite: string): Array<"sqlite" | "mongo"> {
  return needs("MONGODB_URL", `${suite} on MongoDB`) ? ["sqlite", "mongo"] : ["sqlite"];
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
