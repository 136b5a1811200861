import { newId } from "@loom/contracts/ids";
import { createLogger } from "@loom/telemetry/logger";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { toolCallSettings } from "../src/config.ts";
import type { ToolRunRecord } from "../src/store/port.ts";
import { endWriteGraceMs, stoppedMessage } from "../src/tool-run-sweep.ts";
import { callLimits, openToolsStore, wireTools } from "../src/wiring.ts";

const logger = createLogger("test", "silent");
const secrets = { SECRETS_KEY: Buffer.alloc(32, 7) };
const callTimeoutMs = 1000;

/** A restarted tools process (or another replica) ends at its start what a stopped one left RUNNING. */
describe.each(storeKinds("tool run sweep at start"))("the tool run sweep at start (%s store)", (kind) => {
  it("ends a stale run as the service starts, leaves a recent one, and stops with the service", async () => {
    const db = freshDatabaseName();
    const store = await openToolsStore({ url: kind === "mongo" ? testServers.mongoUrl : undefined, db });
    await store.init();
    const run = (startedMsAgo: number): ToolRunRecord => {
      const at = new Date(Date.now() - startedMsAgo);
      return {
        id: newId(),
        organizationId: newId(),
        toolId: newId(),
        status: "RUNNING",
        runtimePath: "/activities/add",
        input: {},
        logs: [],
        createdBy: "u",
        createdAt: at,
        startedAt: at,
        updatedAt: at,
      };
    };
    const stale = run(callTimeoutMs + endWriteGraceMs + 1);
    const recent = run(callTimeoutMs + endWriteGraceMs - 5_000);
    await store.insertRun(stale);
    await store.insertRun(recent);

    const config = z.object(toolCallSettings).parse({ TOOL_CALL_TIMEOUT_MS: callTimeoutMs });
    // An hour between sweeps: only the one at start can end the stale run within the test.
    const service = await wireTools(
      store,
      { secrets, limits: callLimits(config, { allowLoopback: false }), sweepEveryMs: 3_600_000 },
      logger,
    );
    try {
      await expect
        .poll(async () => (await store.getRun(stale.organizationId, stale.id))?.status, { timeout: 5000 })
        .toBe("ERROR");
      expect(await store.getRun(stale.organizationId, stale.id)).toMatchObject({
        statusDetail: stoppedMessage,
        logs: [stoppedMessage],
      });
      expect(await store.getRun(recent.organizationId, recent.id)).toEqual(recent);
    } finally {
      await service.close();
      if (kind === "mongo") await dropDatabase(testServers.mongoUrl!, db);
    }
  });
});
