import { isTerminal, terminalLifecycleEvents } from "@loom/contracts/run-lifecycle";
import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { answer, callTools, type FakeOpenAI, inTurn, type Reply, startFakeOpenAI } from "@loom/testing/fake-openai";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { type McpTestServer, startMcpServer } from "@loom/testing/mcp-server";
import { storeKinds } from "@loom/testing/servers";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";

/** A scripted model call of `Calc_<activity>`s, OpenAI-compatible. */
const calling = (...calls: Array<{ id: string; name: string; input?: Record<string, unknown> }>): Reply =>
  callTools(calls.map((c) => ({ id: c.id, name: c.name, arguments: c.input ?? {} })));

/** A scripted answer that repeats the tool results the model was given: what a model told of a denial would say. */
const echoResults: Reply = (request, res) =>
  answer(
    request.body.messages
      .filter((m: any) => m.role === "tool")
      .map((m: any) => m.content)
      .join(" | "),
  )(request, res);

describe.each(storeKinds("runs awaiting approval"))("runs awaiting approval (%s store)", (store) => {
  let stack: TestStack;
  let admin: ApiClient;
  let model: FakeOpenAI;
  let mcp: McpTestServer;
  let assistantId: string;
  let plainAssistantId: string;
  const created: string[] = [];

  beforeAll(async () => {
    model = await startFakeOpenAI();
    mcp = await startMcpServer();
    stack = await startStack(store, {
      runs: {
        DEFAULT_MODEL: "openai-compatible:fake-model",
        OPENAI_COMPATIBLE_BASE_URL: model.baseUrl,
        RUN_TOOL_CALL_TIMEOUT_MS: 2_000,
        RUN_MAX_PER_ORGANIZATION: 1,
      },
      tools: { TOOL_ALLOWED_HOSTS: "127.0.0.1" },
    });
    admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
    const tool = (
      await admin.post("/tools", {
        name: "Calc",
        server: { url: mcp.url, transport: "mcp", approval_required: ["add", "json"] },
      })
    ).body;
    assistantId = (await admin.post("/assistants", { name: "guarded", tool_ids: [tool.tool_id] })).body.assistant_id;
    plainAssistantId = (await admin.post("/assistants", { name: "plain" })).body.assistant_id;
  });
  afterAll(async () => {
    await stack?.close();
    await model?.close();
    await mcp?.close();
  });
  beforeEach(() => {
    model.requests.splice(0);
    mcp.calls.splice(0);
  });
  // A paused run holds its thread and waits a day: each test's runs end before the next starts.
  afterEach(async () => {
    for (const id of created.splice(0)) {
      const run = (await admin.get(`/assistant-runs/${id}`)).body;
      if (!isTerminal(run.status)) await admin.post(`/assistant-runs/${id}/cancel`);
      await settled(id);
    }
  });

  const start = async (assistant = assistantId) => {
    const res = await admin.post(`/assistants/${assistant}/runs`, { input: "go" });
    expect(res.status).toBe(201);
    created.push(res.body.assistant_run_id);
    return res.body.assistant_run_id as string;
  };
  const eventsOf = async (runId: string) =>
    (await admin.get(`/assistant-runs/${runId}/events?offset=0&limit=1000`)).body.events as any[];
  /** The run once it is paused for approval, and its events. */
  async function paused(runId: string) {
    let result: { run: any; events: any[] } = { run: undefined, events: [] };
    await vi.waitFor(
      async () => {
        const run = (await admin.get(`/assistant-runs/${runId}`)).body;
        expect(run.status_detail?.reason, `run ${runId}: ${JSON.stringify(run.status_detail)}`).toBe(
          "AwaitingApproval",
        );
        const events = await eventsOf(runId);
        expect(events.some((e) => e.type === "AssistantRunAwaitingApproval")).toBe(true);
        result = { run, events };
      },
      { timeout: 10_000, interval: 20 },
    );
    return result;
  }
  /** The run and its events once it has ended and its log has too. */
  async function settled(runId: string) {
    let result: { run: any; events: any[] } = { run: undefined, events: [] };
    await vi.waitFor(
      async () => {
        const run = (await admin.get(`/assistant-runs/${runId}`)).body;
        const events = await eventsOf(runId);
        expect(isTerminal(run.status), `run ${runId} is ${run.status}`).toBe(true);
        expect(terminalLifecycleEvents.has(events.at(-1)?.type ?? "")).toBe(true);
        result = { run, events };
      },
      { timeout: 10_000, interval: 20 },
    );
    return result;
  }
  const griptapeTypes = (events: any[]) => events.filter((e) => e.origin === "ASSISTANT").map((e) => e.type);

  it("pauses before a call needing approval: RUNNING, saying what awaits, a SYSTEM event, no call made, no slot held", async () => {
    model.reply(
      inTurn(
        calling({ id: "call_1", name: "Calc_add", input: { a: 2, b: 3 } }, { id: "call_2", name: "Calc_image" }),
        answer("plain answer"),
      ),
    );
    const runId = await start();
    const { run, events } = await paused(runId);
    expect(run.status).toBe("RUNNING");
    expect(run.status_detail.message).toContain("Calc.add (call call_1)");
    expect(run.status_detail.message).not.toContain("call_2"); // needs no approval: it waits with the step
    const [awaiting] = events.filter((e) => e.type === "AssistantRunAwaitingApproval");
    expect(awaiting.origin).toBe("SYSTEM");
    expect(awaiting.payload).toMatchObject({
      calls: [{ call_id: "call_1", tool: "Calc", activity: "add", input: { a: 2, b: 3 } }],
    });
    expect(Date.parse(awaiting.payload.deadline)).toBeGreaterThan(Date.now() + 23 * 3600_000);
    // No call of the step was made, and its actions subtask is not begun (it begins with the calls).
    expect(mcp.calls).toEqual([]);
    expect(griptapeTypes(events)).toEqual(["StartStructureRunEvent", "StartPromptEvent", "FinishPromptEvent"]);
    // At RUN_MAX_PER_ORGANIZATION=1, the organization's next run starts: the paused one holds no slot.
    const next = await start(plainAssistantId);
    expect((await settled(next)).run.status).toBe("SUCCEEDED");
    expect((await admin.get(`/assistant-runs/${runId}`)).body.status).toBe("RUNNING");
  });

  it("a cancel ends a paused run", async () => {
    model.reply(calling({ id: "call_1", name: "Calc_add", input: { a: 1, b: 1 } }));
    const runId = await start();
    await paused(runId);
    expect((await admin.post(`/assistant-runs/${runId}/cancel`)).body.status).toBe("CANCELLED");
    expect((await settled(runId)).run.status).toBe("CANCELLED");
    expect(mcp.calls).toEqual([]);
  });
});
