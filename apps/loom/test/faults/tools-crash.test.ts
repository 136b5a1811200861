import { type McpTestServer, startMcpServer } from "@loom/testing/mcp-server";
import { needsOwnServers } from "@loom/testing/own-servers";
import { endWriteGraceMs, stoppedMessage } from "@loom/tools/tool-run-sweep";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FaultStack, startFaultStack, waitUntil } from "./fault-stack.ts";

/** A short time limit and a sweep every 200 ms: the run ends about 30 s (the grace) after the call began. */
const callTimeoutMs = 1_000;
const sweepEveryMs = 200;

/** The tools process killed during a call: its tool run, left RUNNING, still ends (docs/behaviour.md §11). */
describe.skipIf(!needsOwnServers("tools process killed during a call", "nats", "ferretdb"))(
  "the tools process killed during a call",
  () => {
    let stack: FaultStack;
    let mcp: McpTestServer;
    beforeAll(async () => {
      mcp = await startMcpServer();
      stack = await startFaultStack({
        tools: {
          TOOL_ALLOWED_HOSTS: "127.0.0.1",
          TOOL_CALL_TIMEOUT_MS: String(callTimeoutMs),
          TOOL_RUN_SWEEP_INTERVAL_MS: String(sweepEveryMs),
        },
      });
    }, 60_000);
    afterAll(async () => {
      await stack?.close();
      await mcp?.close();
    });

    it("ends the run of a hanging call ERROR with the reason once the call's bound has passed", {
      timeout: 120_000,
    }, async () => {
      const { api } = stack;
      const tool = await api.post("/tools", { name: "t", server: { url: mcp.url, transport: "mcp" } });
      expect(tool.status).toBe(201);
      const toolId = tool.body.tool_id as string;
      const hanging = mcp.hangStarted();
      const call = api.post(`/tools/${toolId}/activities/hang`, {}).catch(() => undefined);
      await hanging;
      const runs = (await api.get(`/tools/${toolId}/runs?status=RUNNING`)).body.tool_runs as Array<{
        tool_run_id: string;
        started_at: string;
      }>;
      expect(runs).toHaveLength(1);
      const runId = runs[0]!.tool_run_id;

      await stack.split.stopService("tools", "SIGKILL");
      const killedAt = Date.now();
      await call;
      await stack.split.startService("tools");
      const ended = await waitUntil("the tool run ended", callTimeoutMs + endWriteGraceMs + 30_000, async () => {
        const run = (await api.get(`/tool-runs/${runId}`)).body;
        return run.status === "RUNNING" ? undefined : run;
      });
      const endedAt = Date.now();
      console.log(
        `fault: tools SIGKILL during a call: its run ${ended.status} ${endedAt - killedAt} ms after the kill ` +
          `(${endedAt - Date.parse(runs[0]!.started_at)} ms after it started; bound ${callTimeoutMs + endWriteGraceMs} ms)`,
      );
      expect(ended).toMatchObject({ status: "ERROR", status_detail: stoppedMessage });
      expect(ended.completed_at).toEqual(expect.any(String));
      expect(endedAt - Date.parse(runs[0]!.started_at)).toBeGreaterThanOrEqual(callTimeoutMs + endWriteGraceMs);
      expect((await api.get(`/tools/${toolId}/runs?status=RUNNING`)).body.tool_runs).toEqual([]);
    });
  },
);
