import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { hashApiKeySecret } from "@loom/identity/api-key-secret";
import { openIdentityStore } from "@loom/identity/wiring";
import { type AllInOne, runAllInOneToExit, startAllInOne } from "@loom/test-stacks/all-in-one";
import { freshDataDir } from "@loom/testing/data-dir";
import { apiClient } from "@loom/testing/http";
import { freePort, nodeFlagsFor, repoRoot } from "@loom/testing/processes";
import { dropDatabase, freshDatabaseName, needs, testServers } from "@loom/testing/servers";
import { afterAll, describe, expect, it } from "vitest";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));

/** `pnpm loom keys create …` as an operator runs it on the host: its exit code, its stdout (the key) and its stderr. */
async function keysCreate(
  env: Record<string, string>,
  ...args: string[]
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn("pnpm", ["--silent", "loom", "keys", "create", ...args], {
    cwd: repoRoot,
    env: { ...process.env, MONGODB_URL: "", LOG_FORMAT: "json", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  return { code, stdout, stderr };
}

/** The first key is printed once: a start that fails must not have made it (docs/decisions.md, "First start and logs"). */
describe("the bootstrap key", () => {
  let loom: AllInOne | undefined;
  afterAll(async () => void (await loom?.stop("SIGKILL")));

  it("is not made by a first start that fails once its records are open (a taken port): the next start prints it, and it works", {
    timeout: 60_000,
  }, async () => {
    const dataDir = freshDataDir();
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    try {
      const failed = await runAllInOneToExit({
        PORT: String((taken.address() as { port: number }).port),
        LOOM_DATA_DIR: dataDir,
      });
      expect(failed.code).toBe(1);
      expect(existsSync(join(dataDir, "loom.db"))).toBe(true); // its records were open
      expect(failed.output).not.toContain("shown once");
    } finally {
      taken.close();
    }
    loom = await startAllInOne({ PORT: "0", LOOM_DATA_DIR: dataDir });
    const key = await loom.bootstrapKey();
    expect(key, loom.output()).toBeDefined();
    expect((await apiClient(loom.url, key).get("/users")).status).toBe(200);
    expect(await loom.stop("SIGTERM")).toBe(0);
  });
});

/**
 * The identity service run on its own (runService), as the image runs it:
 * resolves once it printed a key or exited, with what it printed and its
 * exit code (null: it was running, and is killed).
 */
async function identityService(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const script = join(repoRoot, "apps/identity/src/main.ts");
  const child = spawn(process.execPath, [...nodeFlagsFor(script), script], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LOG_FORMAT: "json",
      SERVICE_TOKEN: "t".repeat(24),
      METRICS_PORT: "0",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  const printedKey = new Promise<void>((resolve) => {
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("shown once")) resolve();
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
  });
  const code = await Promise.race([exited, printedKey.then(() => undefined)]);
  if (code !== undefined) return { code, output };
  child.kill("SIGKILL");
  await exited;
  return { code: null, output };
}

describe.skipIf(!needs("MONGODB_URL", "the identity service's bootstrap key on MongoDB"))(
  "the identity service's bootstrap key (MongoDB)",
  () => {
    const db = freshDatabaseName();
    afterAll(async () => dropDatabase(testServers.mongoUrl!, db));

    it("is not made by a start that fails on a taken port: the next start prints it", { timeout: 60_000 }, async () => {
      const taken = createServer();
      await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
      const settings = { MONGODB_URL: testServers.mongoUrl!, MONGODB_DB: db, HOST: "127.0.0.1" };
      try {
        const failed = await identityService({ ...settings, PORT: String((taken.address() as { port: number }).port) });
        expect(failed.code, failed.output).toBe(1);
        expect(failed.output).not.toContain("shown once");
      } finally {
        taken.close();
      }
      const started = await identityService({ ...settings, PORT: "0" });
      const key = /bootstrap API key \(shown once\): (loom_\S+)"/.exec(started.output)?.[1];
      expect(key, started.output).toBeDefined();
      // What an API request with it would find: the key, among the stored ones.
      const store = await openIdentityStore({ url: testServers.mongoUrl, db });
      try {
        expect((await store.findApiKeyBySecretHash(hashApiKeySecret(key!)))?.name).toBe("bootstrap");
      } finally {
        await store.close();
      }
    });
  },
);

/**
 * The all-in-one with a seeded key, as the benches and deployments start it:
 * the first request after /healthz first answers must already find the key,
 * though the bootstrap runs after the listener (on MongoDB it takes long
 * enough for such a request to come first, were it not held).
 */
const recordsIn = [
  ["the data directory", ""],
  ...(needs("MONGODB_URL", "the first requests of a first start on MongoDB")
    ? [["MongoDB", testServers.mongoUrl!]]
    : []),
];

describe.each(recordsIn)("the first requests of a first start (records in %s)", (_, mongoUrl) => {
  const prefix = `${freshDatabaseName()}_`;
  afterAll(async () => void (mongoUrl && (await dropDatabase(mongoUrl, `${prefix}identity`))));

  it("wait for the bootstrap: a seeded key works from the first answer of /healthz on", {
    timeout: 60_000,
  }, async () => {
    const seeded = `loom_seeded-${"f1rst".repeat(8)}`;
    const port = await freePort();
    const child = spawn(process.execPath, [...nodeFlagsFor(main), main], {
      env: {
        ...process.env,
        MONGODB_URL: mongoUrl,
        MONGODB_DB_PREFIX: prefix,
        NATS_URL: "",
        LOG_LEVEL: "warn",
        LOG_FORMAT: "json",
        PORT: String(port),
        LOOM_DATA_DIR: freshDataDir(),
        BOOTSTRAP_API_KEY: seeded,
      },
      stdio: "ignore",
    });
    try {
      // As soon as it answers at all (polled without pause), a request with the key.
      while (
        !(await fetch(`http://127.0.0.1:${port}/healthz`).then(
          (r) => r.ok,
          () => false,
        ))
      );
      expect((await apiClient(`http://127.0.0.1:${port}`, seeded).get("/users")).status).toBe(200);
    } finally {
      child.kill("SIGKILL");
    }
  });
});

describe("pnpm loom keys create", () => {
  const dataDir = freshDataDir();
  let loom: AllInOne | undefined;
  afterAll(async () => void (await loom?.stop("SIGKILL")));

  it("mints an organization key on a stopped data directory that authenticates once Loom runs, and is refused while it runs", {
    timeout: 90_000,
  }, async () => {
    loom = await startAllInOne({ PORT: "0", LOOM_DATA_DIR: dataDir });
    const bootstrapKey = (await loom.bootstrapKey())!;
    const organizationId = (await apiClient(loom.url, bootstrapKey).get("/users")).body.users[0]
      .organizations[0] as string;

    const whileRunning = await keysCreate({ LOOM_DATA_DIR: dataDir });
    expect(whileRunning.code).toBe(1);
    expect(whileRunning.stdout).toBe("");
    expect(whileRunning.stderr).toContain(
      `the data directory ${dataDir} is in use by a running Loom (pid ${loom.child.pid})`,
    );
    expect(whileRunning.stderr).not.toMatch(/\n\s+at /);
    expect(await loom.stop("SIGTERM")).toBe(0);

    const minted = await keysCreate({ LOOM_DATA_DIR: dataDir }, "--name", "recovery");
    expect(minted.code, minted.stderr).toBe(0);
    expect(minted.stderr).toContain(`Created the organization API key "recovery" in organization ${organizationId}`);
    const key = minted.stdout.trim();
    expect(key).toMatch(/^loom_[A-Za-z0-9_-]{43}$/);

    loom = await startAllInOne({ PORT: "0", LOOM_DATA_DIR: dataDir });
    const api = apiClient(loom.url, key);
    expect((await api.get("/users")).status).toBe(200);
    const listed = await api.get(`/organizations/${organizationId}/api-keys`);
    expect(listed.status).toBe(200);
    expect(listed.body.api_keys.map((k: { name: string }) => k.name)).toContain("recovery");
    expect(await loom.stop("SIGTERM")).toBe(0);
  });

  it("refuses a directory that is not a data directory, and an unknown organization, saying which", {
    timeout: 60_000,
  }, async () => {
    const nowhere = await keysCreate({ LOOM_DATA_DIR: `${dataDir}/typo` });
    expect(nowhere.code).toBe(1);
    expect(nowhere.stderr).toContain(`LOOM_DATA_DIR: ${dataDir}/typo is not a Loom data directory`);
    const unknown = await keysCreate(
      { LOOM_DATA_DIR: dataDir },
      "--organization",
      "00000000-0000-4000-8000-000000000000",
    );
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("no organization 00000000-0000-4000-8000-000000000000");
    expect(unknown.stdout).toBe("");
  });
});

describe.skipIf(!needs("MONGODB_URL", "pnpm loom keys create on MongoDB"))("pnpm loom keys create (MongoDB)", () => {
  const prefix = `${freshDatabaseName()}_`;
  afterAll(async () => dropDatabase(testServers.mongoUrl!, `${prefix}identity`));

  it("bootstraps empty records, then mints further keys in the same organization", { timeout: 60_000 }, async () => {
    const env = { MONGODB_URL: testServers.mongoUrl!, MONGODB_DB_PREFIX: prefix, LOOM_DATA_DIR: freshDataDir() };
    const first = await keysCreate(env);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain("The records were empty: created the first user (admin@localhost)");
    const second = await keysCreate(env, "--name", "ci");
    expect(second.code, second.stderr).toBe(0);
    const store = await openIdentityStore({ url: testServers.mongoUrl, db: `${prefix}identity` });
    try {
      const bootstrap = await store.findApiKeyBySecretHash(hashApiKeySecret(first.stdout.trim()));
      const ci = await store.findApiKeyBySecretHash(hashApiKeySecret(second.stdout.trim()));
      expect(bootstrap?.name).toBe("bootstrap");
      expect(ci).toMatchObject({
        name: "ci",
        organizationId: bootstrap!.organizationId,
        createdBy: bootstrap!.createdBy,
      });
      expect(ci?.userId).toBeUndefined(); // an organization key
    } finally {
      await store.close();
    }
  });
});
