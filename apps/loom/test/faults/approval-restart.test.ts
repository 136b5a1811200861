import { type AllInOne, startAllInOne } from "@loom/test-stacks/all-in-one";
import { freshDataDir } from "@loom/testing/data-dir";
import { answer, callTools, type FakeOpenAI, inTurn, type Reply, startFakeOpenAI } from "@loom/testing/fake-openai";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { type McpTestServer, startMcpServer } from "@loom/testing/mcp-server";
import { scrapeMetrics } from "@loom/testing/metrics";
import { needsOwnServers } from "@loom/testing/own-servers";
import { freePort } from "@loom/testing/processes";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FaultStack, startFaultStack, waitUntil } from "./fault-stack.ts";

/** The model: calls `<tool>_add`, then answers with the result it was given. */
const script = (toolName = "Calc"): Reply =>
  inTurn(callTools([{ id: "call_1", name: `${toolName}_add`, arguments: { a: 20, b: 22 } }]), (request, res) =>
    answer(`The sum is ${request.body.messages.find((m: any) => m.role === "tool")?.content}.`)(request, res),
  );

/** A tool whose every activity needs approval, an assistant using it, and a run of it once paused. */
async function pausedRun(api: ApiClient, mcp: McpTestServer, toolName = "Calc"): Promise<string> {
  const tool = await api.post("/tools", {
    name: toolName,
    server: { url: mcp.url, transport: "mcp", approval_required: true },
  });
  expect(tool.status).toBe(201);
  const assistantId = (await api.post("/assistants", { name: "guarded", tool_ids: [tool.body.tool_id] })).body
    .assistant_id;
  const runId = (await api.post(`/assistants/${assistantId}/runs`, { input: "Add 20 and 22" })).body
    .assistant_run_id as string;
  await waitUntil("the run awaits approval", 15_000, async () => {
    const run = (await api.get(`/assistant-runs/${runId}`)).body;
    return run.status_detail?.reason === "AwaitingApproval" ? run : undefined;
  });
  return runId;
}

/** Approves the run's call and waits for its end: SUCCEEDED with the tool's result in the answer. */
async function approveToSuccess(api: ApiClient, runId: string, mcp: McpTestServer) {
  const decided = await api.post(`/assistant-runs/${runId}/approvals`, {
    decisions: [{ call_id: "call_1", approved: true }],
  });
  expect(decided.status).toBe(200);
  const done = await waitUntil("the run ends", 20_000, async () => {
    const run = (await api.get(`/assistant-runs/${runId}`)).body;
    return run.completed_at ? run : undefined;
  });
  expect(done.status).toBe("SUCCEEDED");
  expect(done.output.value).toBe("The sum is 42.");
  expect(mcp.calls.map((c) => [c.tool, c.arguments])).toEqual([["add", { a: 20, b: 22 }]]);
  return done;
}

describe("a run awaiting approval when the all-in-one is killed", () => {
  let loom: AllInOne | undefined;
  let model: FakeOpenAI;
  let mcp: McpTestServer;
  const key = "loom_approval-restart-0123456789abcdefghijklmno";

  beforeAll(async () => {
    model = await startFakeOpenAI();
    mcp = await startMcpServer();
  });
  afterAll(async () => {
    await loom?.stop("SIGKILL");
    await model?.close();
    await mcp?.close();
  });

  it("is still awaiting after a restart, and the approval resumes it to SUCCEEDED", { timeout: 90_000 }, async () => {
    const env = {
      LOOM_DATA_DIR: freshDataDir(),
      PORT: String(await freePort()),
      BOOTSTRAP_API_KEY: key,
      DEFAULT_MODEL: "openai-compatible:fake-model",
      OPENAI_COMPATIBLE_BASE_URL: model.baseUrl,
    };
    model.reply(script());
    loom = await startAllInOne(env);
    const runId = await pausedRun(apiClient(loom.url, key), mcp);

    expect(await loom.stop("SIGKILL")).toBeNull();
    loom = await startAllInOne(env);
    const api = apiClient(loom.url, key);
    const after = (await api.get(`/assistant-runs/${runId}`)).body;
    expect(after.status).toBe("RUNNING");
    expect(after.status_detail).toMatchObject({ reason: "AwaitingApproval", calls: [{ call_id: "call_1" }] });
    expect(mcp.calls).toEqual([]);
    await approveToSuccess(api, runId, mcp);
  });
});

describe.skipIf(!needsOwnServers("approval in the split deployment", "nats", "ferretdb"))(
  "a run awaiting approval in the split deployment, two runs replicas side by side",
  () => {
    let stack: FaultStack;
    let mcp: McpTestServer;
    beforeAll(async () => {
      mcp = await startMcpServer();
      stack = await startFaultStack({ tools: { TOOL_ALLOWED_HOSTS: "127.0.0.1" }, runsReplicas: 2 });
    }, 90_000);
    afterAll(async () => {
      await stack?.close();
      await mcp?.close();
    });

    /** Each runs replica's count of a transition it made (`loom_runs_transitions_total`), by replica number. */
    const madeBy = async (from: string, to: string, replicas: number[]) =>
      Promise.all(
        replicas.map(
          async (i) =>
            (await scrapeMetrics(stack.split.replicaMetricsUrls.runs[i]!)).value("loom_runs_transitions_total", {
              from,
              to,
            }) ?? 0,
        ),
      );

    it("with both up, the approval resumes it to SUCCEEDED on one of them", { timeout: 90_000 }, async () => {
      mcp.calls.length = 0;
      stack.model.reply(script("CalcBoth"));
      const [startedBefore, endedBefore] = [
        await madeBy("STARTING", "RUNNING", [0, 1]),
        await madeBy("RUNNING", "SUCCEEDED", [0, 1]),
      ];
      const runId = await pausedRun(stack.api, mcp, "CalcBoth");
      await approveToSuccess(stack.api, runId, mcp);
      const started = (await madeBy("STARTING", "RUNNING", [0, 1])).map((n, i) => n - startedBefore[i]!);
      // The end's counter moves just after the store's write the API reads: waited for, not read at once.
      const ended = await waitUntil("the end counted", 10_000, async () => {
        const counts = (await madeBy("RUNNING", "SUCCEEDED", [0, 1])).map((n, i) => n - endedBefore[i]!);
        return counts.reduce((a, b) => a + b) >= 1 ? counts : undefined;
      });
      // One replica started it and one (either: whichever claimed the queue entry first) ended it.
      expect(started.reduce((a, b) => a + b)).toBe(1);
      expect(ended.reduce((a, b) => a + b)).toBe(1);
      console.info(`paused by runs replica ${started.indexOf(1)}, resumed to its end by replica ${ended.indexOf(1)}`);
    });

    it("with the replica that paused it killed, the approval makes the other resume it", {
      timeout: 90_000,
    }, async () => {
      mcp.calls.length = 0;
      stack.model.reply(script("CalcKilled"));
      const startedBefore = await madeBy("STARTING", "RUNNING", [0, 1]);
      const runId = await pausedRun(stack.api, mcp, "CalcKilled");
      const started = (await madeBy("STARTING", "RUNNING", [0, 1])).map((n, i) => n - startedBefore[i]!);
      const pauser = started.indexOf(1);
      const other = 1 - pauser;
      expect(pauser).toBeGreaterThanOrEqual(0);
      const endedBefore = await madeBy("RUNNING", "SUCCEEDED", [other]);
      // Gone for good, and nothing restarted: the one left takes the approval (through the balancer) and the run.
      await stack.split.stopService("runs", "SIGKILL", pauser);
      expect((await stack.api.get(`/assistant-runs/${runId}`)).body.status_detail.reason).toBe("AwaitingApproval");
      await approveToSuccess(stack.api, runId, mcp);
      // The counter moves just after the store's write the API reads: waited for, not read at once.
      await waitUntil("the other replica's end counted", 10_000, async () =>
        (await madeBy("RUNNING", "SUCCEEDED", [other]))[0]! - endedBefore[0]! === 1 ? true : undefined,
      );
    });
  },
);
