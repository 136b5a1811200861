import { join } from "node:path";
import { type AllInOne, runAllInOneToExit, startAllInOne } from "@loom/test-stacks/all-in-one";
import { freshDataDir } from "@loom/testing/data-dir";
import { apiClient } from "@loom/testing/http";
import { afterAll, describe, expect, it } from "vitest";

/** What `pnpm start` runs, as a child process: it prints its URL and first key, and serves. */
describe("the all-in-one process", () => {
  const dataDir = freshDataDir();
  let loom: AllInOne | undefined;
  afterAll(async () => void (await loom?.stop("SIGKILL")));

  it("starts with embedded defaults, prints the URL, the data directory and the bootstrap key, and serves the API", async () => {
    loom = await startAllInOne({ PORT: "0", LOOM_DATA_DIR: join(dataDir, "first") });
    expect(loom.output()).toContain(`data directory ${join(dataDir, "first")} (new: created)`);
    const key = await loom.bootstrapKey();
    expect(key).toMatch(/^loom_[A-Za-z0-9_-]{43}$/);
    const anonymous = apiClient(loom.url);
    expect((await anonymous.get("/healthz")).status).toBe(200);
    expect((await anonymous.get("/readyz")).status).toBe(200);
    const users = await apiClient(loom.url, key).get("/api/users");
    expect(users.status).toBe(200);
    expect(users.body.users[0].email).toBe("admin@localhost");
    expect(await loom.stop("SIGTERM")).toBe(0);
  });

  it("uses a seeded BOOTSTRAP_API_KEY and never prints it", async () => {
    const seeded = `loom_seeded-${"s3cr3t".repeat(6)}`;
    loom = await startAllInOne({
      PORT: "0",
      LOOM_DATA_DIR: join(dataDir, "seeded"),
      BOOTSTRAP_API_KEY: seeded,
      LOG_LEVEL: "trace",
    });
    expect((await apiClient(loom.url, seeded).get("/users")).status).toBe(200);
    await loom.stop("SIGTERM");
    // The log was read: it says what was bootstrapped, never with what key.
    const output = loom.output();
    expect(output).toContain("bootstrapped the first user, organization and API key");
    expect(output).not.toContain("shown once");
    expect(output).not.toContain(seeded);
    expect(output).not.toContain("s3cr3t");
  });

  it("refuses to start with a bad setting, saying which", async () => {
    const { code, output } = await runAllInOneToExit({ PORT: "eighty", LOOM_DATA_DIR: join(dataDir, "bad") });
    expect(code).toBe(1);
    expect(output).toMatch(/PORT/);
    expect(output).not.toMatch(/\n\s+at /); // the message, without a stack
  });
});
