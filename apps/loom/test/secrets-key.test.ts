import { randomBytes } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { loadConfig } from "@loom/runtime/config";
import { createLogger } from "@loom/telemetry/logger";
import { freshDataDir } from "@loom/testing/data-dir";
import { apiClient } from "@loom/testing/http";
import { keyIdOf } from "@loom/tools/secret-keys";
import { describe, expect, it } from "vitest";
import { loomConfigSchema } from "../src/config.ts";
import { startEmbedded } from "../src/embedded.ts";

const adminKey = "loom_secrets-key-test-0123456789abcdefghijklmnopqrstu";

/** Starts the all-in-one on `dir`, runs `work` against its API, stops it. */
async function withLoom(
  dir: string,
  env: Record<string, string>,
  work: (api: ReturnType<typeof apiClient>) => Promise<void>,
) {
  const config = loadConfig(loomConfigSchema, { PORT: "0", LOOM_DATA_DIR: dir, BOOTSTRAP_API_KEY: adminKey, ...env });
  const loom = await startEmbedded(config, createLogger("test", "silent"));
  try {
    await loom.finishStart();
    await work(apiClient(loom.server.url, adminKey));
  } finally {
    await loom.server.close();
  }
}

/** The key id each secret's row was sealed with, read from the data directory's database. */
function keyIdsInDatabase(dir: string): string[] {
  const db = new DatabaseSync(join(dir, "loom.db"), { readOnly: true });
  try {
    return db
      .prepare("SELECT key_id FROM tools_secrets ORDER BY id")
      .all()
      .map((row) => row.key_id as string);
  } finally {
    db.close();
  }
}

describe("the all-in-one's secrets key", () => {
  it("is made once in the data directory, readable by its owner only, and kept across restarts", async () => {
    const dir = freshDataDir();
    await withLoom(dir, {}, async (api) => {
      expect((await api.post("/secrets", { name: "token", value: "v1" })).status).toBe(201);
    });
    const file = join(dir, "secrets-key");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const key = Buffer.from(readFileSync(file, "utf8").trim(), "base64");
    expect(key).toHaveLength(32);
    expect(keyIdsInDatabase(dir)).toEqual([keyIdOf(key)]);
    await withLoom(dir, {}, async (api) => {
      expect((await api.get("/secrets")).body.secrets).toHaveLength(1);
    });
    expect(Buffer.from(readFileSync(file, "utf8").trim(), "base64").equals(key)).toBe(true);
  });

  it("gives way to SECRETS_KEY, and a start with the data directory's key in SECRETS_PREVIOUS_KEYS reseals every row", async () => {
    const dir = freshDataDir();
    await withLoom(dir, {}, async (api) => {
      for (const name of ["a", "b"]) await api.post("/secrets", { name, value: `value ${name}` });
    });
    const old = readFileSync(join(dir, "secrets-key"), "utf8").trim();
    const next = randomBytes(32);
    await withLoom(dir, { SECRETS_KEY: next.toString("base64"), SECRETS_PREVIOUS_KEYS: old }, async (api) => {
      expect((await api.post("/secrets", { name: "c", value: "value c" })).status).toBe(201);
    });
    expect(keyIdsInDatabase(dir)).toEqual([keyIdOf(next), keyIdOf(next), keyIdOf(next)]);
  });

  it("refuses a SECRETS_KEY that is not 32 bytes in base64, naming it", () => {
    expect(() => loadConfig(loomConfigSchema, { SECRETS_KEY: "too-short" })).toThrow(
      /SECRETS_KEY: must be 32 random bytes in base64/,
    );
    expect(() =>
      loadConfig(loomConfigSchema, { SECRETS_PREVIOUS_KEYS: `${randomBytes(32).toString("base64")},nope` }),
    ).toThrow(/SECRETS_PREVIOUS_KEYS.*each key must be 32 random bytes in base64/);
  });
});
