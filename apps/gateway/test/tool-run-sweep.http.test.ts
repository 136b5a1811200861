import { newId } from "@loom/contracts/ids";
import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import type { ApiClient } from "@loom/testing/http";
import { type McpTestServer, startMcpServer } from "@loom/testing/mcp-server";
import { storeKinds } from "@loom/testing/servers";
import { endWriteGraceMs, stoppedMessage } from "@loom/tools/tool-run-sweep";
import type { WiredToolsService } from "@loom/tools/wiring";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toolRunLogsSchema, toolRunSchema } from "../src/schemas.ts";
import { organizationClients } from "./organization-clients.ts";

/** A call's time limit, and a sweep every tenth of a second: a stale run ends within the test, a live call's does not. */
const callTimeoutMs = 1500;
const sweepEveryMs = 100;

describe.each(storeKinds("tool run sweep over HTTP"))(
  "tool runs a stopped process left RUNNING (%s store)",
  (store) => {
    let stack: TestStack;
    let admin: ApiClient;
    let adminUserId: string;
    let orgId: string;
    let mcp: McpTestServer;
    let toolId: string;

    beforeAll(async () => {
      mcp = await startMcpServer();
      stack = await startStack(store, {
        tools: {
          TOOL_ALLOWED_HOSTS: "127.0.0.1",
          TOOL_CALL_TIMEOUT_MS: callTimeoutMs,
          TOOL_RUN_SWEEP_INTERVAL_MS: sweepEveryMs,
        },
      });
      ({ admin, adminUserId, orgId } = await organizationClients(stack, `tool-run-sweep-stranger-${store}`));
      const res = await admin.post("/api/tools", {
        name: "t",
        server: { url: mcp.url, transport: "mcp", headers: {} },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      toolId = res.body.tool_id;
    });
    afterAll(async () => {
      await stack?.close();
      await mcp?.close();
    });

    const toolRun = async (id: string) => toolRunSchema.parse((await admin.get(`/api/tool-runs/${id}`)).body);

    /** What a tools process killed during a call leaves: the run it inserted RUNNING, never ended. */
    async function leftRunning(startedMsAgo: number): Promise<string> {
      const at = new Date(Date.now() - startedMsAgo);
      const id = newId();
      await (stack.wired("tools") as WiredToolsService).store.insertRun({
        id,
        organizationId: orgId,
        toolId,
        status: "RUNNING",
        runtimePath: "/activities/add",
        input: { a: 1, b: 2 },
        logs: [`called add on ${mcp.url}`],
        createdBy: adminUserId,
        createdAt: at,
        startedAt: at,
        updatedAt: at,
      });
      return id;
    }

    it("ends a run older than any call with ERROR and the reason; a call in flight is left to end by itself", async () => {
      const stale = await leftRunning(callTimeoutMs + endWriteGraceMs + 60_000);
      const hanging = mcp.hangStarted();
      const call = admin.post(`/api/tools/${toolId}/activities/hang`, {});
      await hanging;

      await expect.poll(async () => (await toolRun(stale)).status, { timeout: 5000 }).toBe("ERROR");
      const ended = await toolRun(stale);
      expect(ended).toMatchObject({
        status_detail: stoppedMessage,
        output: { type: "ErrorArtifact", value: stoppedMessage },
      });
      expect(Date.parse(ended.completed_at!)).toBeGreaterThan(Date.parse(ended.started_at!));
      const logs = toolRunLogsSchema.parse((await admin.get(`/api/tool-runs/${stale}/logs`)).body).logs;
      expect(logs).toEqual([`called add on ${mcp.url}`, stoppedMessage]);

      // Several sweeps have run since the call started: its run, within the time limit, is still its own.
      const live = (await admin.get(`/api/tools/${toolId}/runs?status=RUNNING`)).body.tool_runs;
      expect(live).toHaveLength(1);
      expect((await call).status).toBe(200);
      expect(await toolRun(live[0].tool_run_id)).toMatchObject({
        status: "ERROR",
        status_detail: `the tool server did not answer within ${callTimeoutMs} ms`,
      });
    });

    it("leaves a run that may still be in progress on another replica (started within the time limit and grace)", async () => {
      const recent = await leftRunning(callTimeoutMs);
      // Ten sweeps at least.
      await new Promise((resolve) => setTimeout(resolve, sweepEveryMs * 10));
      const run = await toolRun(recent);
      expect(run.status).toBe("RUNNING");
      expect(run.completed_at ?? null).toBeNull();
    });
  },
);
