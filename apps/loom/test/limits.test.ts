import { loadConfig } from "@loom/runtime/config";
import { createLogger } from "@loom/telemetry/logger";
import { freshDataDir } from "@loom/testing/data-dir";
import { apiClient } from "@loom/testing/http";
import { openSse } from "@loom/testing/sse";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loomConfigSchema } from "../src/config.ts";
import { type EmbeddedLoom, startEmbedded } from "../src/embedded.ts";

/** The gateway's limit settings reach the gateway of the all-in-one process (their behaviour: apps/gateway/test/limits.http.test.ts). */
describe("the all-in-one process's limit settings", () => {
  const key = "loom_limits-test-0123456789abcdefghijklmnopqrstuvwxyz";
  let loom: EmbeddedLoom;
  beforeAll(async () => {
    const config = loadConfig(loomConfigSchema, {
      PORT: "0",
      LOOM_DATA_DIR: freshDataDir(),
      BOOTSTRAP_API_KEY: key,
      RATE_LIMIT_REQUESTS: "4",
      RATE_LIMIT_WINDOW_SECONDS: "60",
      STREAMS_PER_CREDENTIAL: "1",
    });
    loom = await startEmbedded(config, createLogger("test", "silent"));
    await loom.finishStart(); // requests wait for the end of the start (the bootstrap), as in main.ts
  });
  afterAll(() => loom?.server.close());

  it("limits a credential's requests and its open streams", async () => {
    const api = apiClient(loom.server.url, key);
    const runId = crypto.randomUUID();
    await api.post(`/structure-runs/${runId}/events`, [{ type: "Open", timestamp: 1 }]);
    const url = `${loom.server.url}/structure-runs/${runId}/events/stream`;
    const first = await openSse(url, { authorization: `Bearer ${key}` });
    expect(first.status).toBe(200);
    expect(first.headers.get("ratelimit-policy")).toBe("4;w=60");
    expect((await openSse(url, { authorization: `Bearer ${key}` })).status).toBe(429); // the stream cap
    first.close();
    expect((await api.get("/users")).headers.get("ratelimit-remaining")).toBe("0");
    expect((await api.get("/users")).status).toBe(429); // the rate limit
  });

  it("rejects a bad setting, naming it", () => {
    expect(() => loadConfig(loomConfigSchema, { STREAMS_PER_CREDENTIAL: "0" })).toThrow(/STREAMS_PER_CREDENTIAL/);
    expect(() => loadConfig(loomConfigSchema, { RATE_LIMIT_REQUESTS: "lots" })).toThrow(/RATE_LIMIT_REQUESTS/);
    for (const name of [
      "STREAMS_PER_ORGANIZATION",
      "RATE_LIMIT_ORGANIZATION_REQUESTS",
      "API_KEYS_PER_USER",
      "API_KEYS_PER_ORGANIZATION",
    ]) {
      expect(() => loadConfig(loomConfigSchema, { [name]: "0" })).toThrow(new RegExp(name));
    }
    expect(() => loadConfig(loomConfigSchema, { ACCESS_TOKEN_MAX_LIFETIME_SECONDS: "forever" })).toThrow(
      /ACCESS_TOKEN_MAX_LIFETIME_SECONDS/,
    );
  });
});
