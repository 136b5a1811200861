import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { runAllInOneToExit } from "@loom/test-stacks/all-in-one";
import { freshDataDir } from "@loom/testing/data-dir";
import { freePort, nodeFlagsFor, repoRoot } from "@loom/testing/processes";
import { describe, expect, it } from "vitest";

/** The lines at level fatal (60) of a JSON-lines output: what a refused start says. */
function fatalLines(output: string): string[] {
  return output
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as { level: number; msg: string })
    .filter((line) => line.level === 60)
    .map((line) => line.msg);
}

/** A refused start as an operator sees it: exit 1 and one line saying what to fix, no stack, no Node warning. */
function expectRefused(result: { code: number | null; output: string }, says: RegExp): void {
  expect(result.output).not.toContain("unsettled top-level await");
  expect(result.code, result.output).toBe(1);
  expect(fatalLines(result.output)).toEqual([expect.stringMatching(says)]);
  expect(result.output).not.toMatch(/\n\s+at /);
  expect(result.output).not.toMatch(/\\n\s+at /); // nor a stack inside a JSON line
}

async function holdPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as { port: number }).port, server };
}

/** `pnpm start` with a mistake in it: the process says what and exits 1, whatever stage the mistake stops. */
describe("a start that cannot succeed", () => {
  it("names the provider key a DEFAULT_MODEL needs", { timeout: 30_000 }, async () => {
    const result = await runAllInOneToExit({ PORT: "0", DEFAULT_MODEL: "openai:gpt-4.1", OPENAI_API_KEY: "" });
    expectRefused(result, /^OPENAI_API_KEY: must be set/);
  });

  it("names the database file whose tables are at a newer schema", async () => {
    const dataDir = freshDataDir();
    // As a newer Loom would leave it: its runs tables at a version this one does not know.
    const db = new DatabaseSync(join(dataDir, "loom.db"));
    db.exec(
      "CREATE TABLE schema_migrations (scope TEXT NOT NULL, version INTEGER NOT NULL, applied_at INTEGER NOT NULL, PRIMARY KEY (scope, version))",
    );
    db.prepare("INSERT INTO schema_migrations VALUES ('runs', 99, 0)").run();
    db.close();
    const result = await runAllInOneToExit({ PORT: "0", LOOM_DATA_DIR: dataDir });
    expectRefused(
      result,
      new RegExp(`^${join(dataDir, "loom.db")}: the runs tables are at schema version 99, newer than this Loom knows`),
    );
  });

  it("names LOOM_DATA_DIR when the directory cannot be made", { timeout: 30_000 }, async () => {
    const file = join(freshDataDir(), "a-file");
    writeFileSync(file, "");
    const result = await runAllInOneToExit({ PORT: "0", LOOM_DATA_DIR: join(file, "data") });
    expectRefused(result, new RegExp(`^LOOM_DATA_DIR: cannot make the data directory ${join(file, "data")}: ENOTDIR`));
  });

  it("names BLOB_DIR when asset bytes cannot be kept there", { timeout: 30_000 }, async () => {
    const file = join(freshDataDir(), "a-file");
    writeFileSync(file, "");
    const result = await runAllInOneToExit({ PORT: "0", BLOB_DIR: join(file, "blobs") });
    expectRefused(result, new RegExp(`^BLOB_DIR: cannot keep asset bytes in ${join(file, "blobs")}: ENOTDIR`));
  });

  it("names NATS_URL when no NATS server answers there, without its credentials", { timeout: 30_000 }, async () => {
    const closed = await freePort();
    const result = await runAllInOneToExit({ PORT: "0", NATS_URL: `nats://loom:s3cret@127.0.0.1:${closed}` });
    expectRefused(result, new RegExp(`^NATS_URL: cannot connect to NATS at 127\\.0\\.0\\.1:${closed}`));
    expect(result.output).not.toContain("s3cret");
  });

  it("names PORT when it is taken", { timeout: 30_000 }, async () => {
    const taken = await holdPort();
    try {
      const result = await runAllInOneToExit({ PORT: String(taken.port) });
      expectRefused(result, new RegExp(`^PORT: 127\\.0\\.0\\.1:${taken.port} is already in use`));
    } finally {
      taken.server.close();
    }
  });

  it("names METRICS_PORT when it is taken", { timeout: 30_000 }, async () => {
    const taken = await holdPort();
    try {
      const result = await runAllInOneToExit({ PORT: "0", METRICS_PORT: String(taken.port) });
      expectRefused(result, new RegExp(`^METRICS_PORT: 127\\.0\\.0\\.1:${taken.port} is already in use`));
    } finally {
      taken.server.close();
    }
  });
});

/** A service's main.ts run to its end, as the image runs it: exit code, output, and how long it took. */
async function runServiceToExit(
  app: string,
  env: Record<string, string>,
): Promise<{ code: number | null; output: string; ms: number }> {
  const script = join(repoRoot, "apps", app, "src", "main.ts");
  const started = Date.now();
  const child = spawn(process.execPath, [...nodeFlagsFor(script), script], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LOG_FORMAT: "json",
      SERVICE_TOKEN: "t".repeat(24),
      PORT: "0",
      METRICS_PORT: "0",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  return { code, output, ms: Date.now() - started };
}

describe("a dependency that cannot be used at start", () => {
  it("MongoDB: one line naming MONGODB_URL and where it points, after the URL's own serverSelectionTimeoutMS", {
    timeout: 60_000,
  }, async () => {
    const closed = await freePort(); // nothing listens there
    const result = await runServiceToExit("assistants", {
      MONGODB_URL: `mongodb://loom:s3cret@127.0.0.1:${closed}/?serverSelectionTimeoutMS=9000`,
      // The services it calls (never, here: it does not start).
      KNOWLEDGE_URL: "http://127.0.0.1:1",
      TOOLS_URL: "http://127.0.0.1:1",
    });
    expectRefused(
      result,
      new RegExp(`^MONGODB_URL: no MongoDB server answered at 127\\.0\\.0\\.1:${closed} within 9000 ms`),
    );
    expect(result.output).not.toContain("s3cret");
    // Loom's own default (5 s) would have given up sooner: the URL's setting was honoured.
    expect(result.ms).toBeGreaterThanOrEqual(9000);
  });

  it("S3 without credentials: one line naming S3_ACCESS_KEY_ID", { timeout: 30_000 }, async () => {
    const result = await runAllInOneToExit({
      PORT: "0",
      S3_BUCKET: "loom-assets",
      S3_ENDPOINT: `http://127.0.0.1:${await freePort()}`,
      S3_ACCESS_KEY_ID: "",
      S3_SECRET_ACCESS_KEY: "",
      // Nothing else the AWS SDK's credential chain would find: no variables, no profile, no instance metadata asked for.
      AWS_ACCESS_KEY_ID: "",
      AWS_SECRET_ACCESS_KEY: "",
      AWS_PROFILE: "",
      AWS_SHARED_CREDENTIALS_FILE: join(freshDataDir(), "none"),
      AWS_CONFIG_FILE: join(freshDataDir(), "none"),
      AWS_EC2_METADATA_DISABLED: "true",
    });
    expectRefused(result, /^S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY: not set/);
  });
});

describe("the tools service run on its own", () => {
  it("without SECRETS_KEY: one line naming it and how to make one", { timeout: 30_000 }, async () => {
    const result = await runServiceToExit("tools", {});
    expectRefused(
      result,
      /SECRETS_KEY: is required: 32 random bytes in base64 \(make one with `openssl rand -base64 32`\)/,
    );
  });
});
