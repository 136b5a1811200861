import { createLogger } from "@loom/telemetry/logger";
import { describe, expect, it } from "vitest";
import { startRpcServer } from "../src/rpc-server.ts";

/** A service process (runService) listens before its start ends (identity bootstraps last): what a request meets then. */
describe("requests before a start has ended", () => {
  it("wait for it, then are answered", async () => {
    const started = Promise.withResolvers<void>();
    const server = await startRpcServer({
      services: [],
      serviceToken: "t".repeat(24),
      logger: createLogger("test", "silent"),
      started: started.promise,
    });
    try {
      let answeredAt = 0;
      const answer = fetch(`${server.url}/healthz`).then(async (res) => ((answeredAt = Date.now()), res.status));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(answeredAt).toBe(0); // held while the start goes on
      const endedAt = Date.now();
      started.resolve();
      expect(await answer).toBe(200);
      expect(answeredAt).toBeGreaterThanOrEqual(endedAt);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200); // and later ones at once
    } finally {
      await server.close();
    }
  });
});
