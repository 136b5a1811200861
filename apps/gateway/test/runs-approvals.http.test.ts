import { isTerminal, terminalLifecycleEvents } from "@loom/contracts/run-lifecycle";
import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { answer, callTools, type FakeOpenAI, inTurn, type Reply, startFakeOpenAI } from "@loom/testing/fake-openai";
import type { ApiClient } from "@loom/testing/http";
import { type McpTestServer, startMcpServer } from "@loom/testing/mcp-server";
import { storeKinds } from "@loom/testing/servers";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { organizationClients } from "./organization-clients.ts";

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
  let stranger: ApiClient;
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
    ({ admin, stranger } = await organizationClients(stack, `approvals-stranger-${store}`));
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

  const decide = (runId: string, decisions: unknown[], client = admin) =>
    client.post(`/assistant-runs/${runId}/approvals`, { decisions });

  it("approved: the call runs, its result goes to the model, the run SUCCEEDS; who approved and when is in the events", async () => {
    model.reply(
      inTurn(
        calling({ id: "call_1", name: "Calc_add", input: { a: 2, b: 3 } }, { id: "call_2", name: "Calc_image" }),
        echoResults,
      ),
    );
    const runId = await start();
    const { run } = await paused(runId);
    expect(run.status_detail.calls).toEqual([
      { call_id: "call_1", tool_id: expect.any(String), tool: "Calc", activity: "add", input: { a: 2, b: 3 } },
    ]);
    expect(Date.parse(run.status_detail.deadline)).toBeGreaterThan(Date.now());
    const res = await decide(runId, [{ call_id: "call_1", approved: true }]);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("RUNNING");
    const { run: done, events } = await settled(runId);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.output.value).toMatch(/^5 \| Image, format: png/);
    expect(mcp.calls.map((c) => c.tool).sort()).toEqual(["add", "image"]);
    const [decided] = events.filter((e) => e.type === "AssistantRunApprovalDecided");
    expect(decided.origin).toBe("SYSTEM");
    expect(decided.payload).toMatchObject({ call_id: "call_1", tool: "Calc", activity: "add", approved: true });
    expect(decided.payload.by).toBe(done.created_by);
    expect(Date.parse(decided.payload.at)).toBeLessThanOrEqual(Date.now());
    // griptape's pairing holds: the subtask starts when its calls run, after the decision.
    expect(griptapeTypes(events)).toEqual([
      "StartStructureRunEvent",
      "StartPromptEvent",
      "FinishPromptEvent",
      "StartActionsSubtaskEvent",
      "FinishActionsSubtaskEvent",
      "StartPromptEvent",
      "FinishPromptEvent",
      "FinishStructureRunEvent",
    ]);
    const types = events.map((e) => e.type);
    expect(types.indexOf("AssistantRunApprovalDecided")).toBeLessThan(types.indexOf("StartActionsSubtaskEvent"));
  });

  it("denied with a reason: the call is not made and the model sees the reason", async () => {
    model.reply(
      inTurn(
        calling({ id: "call_1", name: "Calc_add", input: { a: 2, b: 3 } }, { id: "call_2", name: "Calc_json" }),
        echoResults,
      ),
    );
    const runId = await start();
    await paused(runId);
    // Decided one at a time: the run waits until both are.
    const first = await decide(runId, [{ call_id: "call_1", approved: false, reason: "not on a Friday" }]);
    expect(first.status).toBe(200);
    expect(first.body.status_detail.reason).toBe("AwaitingApproval");
    expect(first.body.status_detail.calls[0].decision).toMatchObject({ approved: false, reason: "not on a Friday" });
    // The same decision again changes nothing; another one is 409.
    expect((await decide(runId, [{ call_id: "call_1", approved: false, reason: "not on a Friday" }])).status).toBe(200);
    expect((await decide(runId, [{ call_id: "call_1", approved: true }])).status).toBe(409);
    expect((await decide(runId, [{ call_id: "call_2", approved: true }])).status).toBe(200);
    const { run: done, events } = await settled(runId);
    expect(done.status).toBe("SUCCEEDED");
    expect(done.output.value).toContain("not on a Friday");
    expect(mcp.calls.map((c) => c.tool)).toEqual(["json"]);
    const sent = model.requests[1]!.body.messages.filter((m: any) => m.role === "tool");
    expect(sent[0]).toMatchObject({ tool_call_id: "call_1" });
    expect(sent[0].content).toContain("not on a Friday");
    const decisions = events.filter((e) => e.type === "AssistantRunApprovalDecided").map((e) => e.payload);
    expect(decisions.map((d) => [d.call_id, d.approved, d.reason])).toEqual([
      ["call_1", false, "not on a Friday"],
      ["call_2", true, undefined],
    ]);
    // Ended: deciding is 409.
    expect((await decide(runId, [{ call_id: "call_1", approved: true }])).status).toBe(409);
  });

  it("400 for a call the run does not await or a bad body, 404 for an unknown or another organization's run, 409 for a run not paused", async () => {
    model.reply(
      calling({ id: "call_1", name: "Calc_add", input: { a: 1, b: 1 } }, { id: "call_2", name: "Calc_image" }),
    );
    const runId = await start();
    await paused(runId);
    const unknownCall = await decide(runId, [{ call_id: "call_9", approved: true }]);
    expect(unknownCall.status).toBe(400);
    expect(unknownCall.body.errors.map((e: any) => e.path)).toEqual(["body.decisions[0].call_id"]);
    // A call of the step that needs no approval is not one to decide.
    expect((await decide(runId, [{ call_id: "call_2", approved: true }])).status).toBe(400);
    expect(
      (
        await decide(runId, [
          { call_id: "call_1", approved: true },
          { call_id: "call_1", approved: true },
        ])
      ).body.errors.map((e: any) => e.path),
    ).toEqual(["body.decisions[1].call_id"]);
    expect((await decide(runId, [])).status).toBe(400);
    expect((await decide(runId, [{ call_id: "call_1", approved: "yes" }])).status).toBe(400);
    expect((await decide(runId, [{ call_id: "call_1", approved: false, reason: "x".repeat(2001) }])).status).toBe(400);
    expect((await decide(crypto.randomUUID(), [{ call_id: "call_1", approved: true }])).status).toBe(404);
    // Another organization's user: 404 as for an unknown run.
    expect((await decide(runId, [{ call_id: "call_1", approved: true }], stranger)).status).toBe(404);
    // Nothing was decided by the refused requests.
    const run = (await admin.get(`/assistant-runs/${runId}`)).body;
    expect(run.status_detail.calls[0]).not.toHaveProperty("decision");
    const plain = await start(plainAssistantId);
    await settled(plain);
    expect((await decide(plain, [{ call_id: "call_1", approved: true }])).status).toBe(409);
  });

  it("a paused run keeps its thread: the thread's next run waits QUEUED until it ends, other runs go on", async () => {
    model.reply(inTurn(calling({ id: "call_1", name: "Calc_add", input: { a: 2, b: 3 } }), echoResults));
    const made = (await admin.post(`/assistants/${assistantId}/runs`, { input: "go", new_thread: true })).body;
    const first = made.assistant_run_id as string;
    created.push(first);
    await paused(first);
    const next = (
      await admin.post(`/assistants/${plainAssistantId}/runs`, { input: "and then?", thread_id: made.thread_id })
    ).body.assistant_run_id as string;
    created.push(next);
    // A run outside the thread starts and ends meanwhile; the thread's next one waits.
    expect((await settled(await start(plainAssistantId))).run.status).toBe("SUCCEEDED");
    expect((await admin.get(`/assistant-runs/${next}`)).body.status).toBe("QUEUED");
    expect((await decide(first, [{ call_id: "call_1", approved: true }])).status).toBe(200);
    const { run: firstDone } = await settled(first);
    expect(firstDone.status).toBe("SUCCEEDED");
    const { run: nextDone } = await settled(next);
    expect(nextDone.status).toBe("SUCCEEDED");
    // It started after the paused run's end, and saw its turn in the thread.
    const lastRequest = model.requests.at(-1)!.body.messages;
    expect(JSON.stringify(lastRequest)).toContain(firstDone.output.value);
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

describe.each(storeKinds("approval deadline"))("the approval deadline (%s store)", (store) => {
  let stack: TestStack;
  let admin: ApiClient;
  let model: FakeOpenAI;
  let mcp: McpTestServer;
  let assistantId: string;

  beforeAll(async () => {
    model = await startFakeOpenAI();
    mcp = await startMcpServer();
    stack = await startStack(store, {
      runs: {
        DEFAULT_MODEL: "openai-compatible:fake-model",
        OPENAI_COMPATIBLE_BASE_URL: model.baseUrl,
        // Long enough for the test's own decision to land first on a loaded machine (CI runs 80 files side by side).
        RUN_APPROVAL_TIMEOUT_MS: 4_000,
      },
      tools: { TOOL_ALLOWED_HOSTS: "127.0.0.1" },
    });
    ({ admin } = await organizationClients(stack, `deadline-stranger-${store}`));
    const tool = (
      await admin.post("/tools", { name: "Calc", server: { url: mcp.url, transport: "mcp", approval_required: true } })
    ).body;
    assistantId = (await admin.post("/assistants", { name: "guarded", tool_ids: [tool.tool_id] })).body.assistant_id;
  });
  afterAll(async () => {
    await stack?.close();
    await model?.close();
    await mcp?.close();
  });

  it("undecided calls are denied at RUN_APPROVAL_TIMEOUT_MS, by loom, and the run resumes; a decision after is 409", async () => {
    model.reply(
      inTurn(
        calling({ id: "call_1", name: "Calc_add", input: { a: 2, b: 3 } }, { id: "call_2", name: "Calc_json" }),
        echoResults,
      ),
    );
    const runId = (await admin.post(`/assistants/${assistantId}/runs`, { input: "go" })).body.assistant_run_id;
    await vi.waitFor(
      async () =>
        expect((await admin.get(`/assistant-runs/${runId}`)).body.status_detail?.reason).toBe("AwaitingApproval"),
      { timeout: 10_000, interval: 20 },
    );
    // One decided in time; the other is left to the deadline.
    expect(
      (await admin.post(`/assistant-runs/${runId}/approvals`, { decisions: [{ call_id: "call_2", approved: true }] }))
        .status,
    ).toBe(200);
    let done: any;
    await vi.waitFor(
      async () => {
        done = (await admin.get(`/assistant-runs/${runId}`)).body;
        expect(done.status).toBe("SUCCEEDED");
      },
      { timeout: 15_000, interval: 50 },
    );
    expect(done.output.value).toContain("nobody approved it before its deadline");
    expect(mcp.calls.map((c) => c.tool)).toEqual(["json"]);
    const events = (await admin.get(`/assistant-runs/${runId}/events?offset=0&limit=1000`)).body.events as any[];
    const decisions = events.filter((e) => e.type === "AssistantRunApprovalDecided").map((e) => e.payload);
    expect(decisions.map((d) => [d.call_id, d.approved, d.by])).toEqual([
      ["call_2", true, done.created_by],
      ["call_1", false, "loom"],
    ]);
    expect(decisions[1].reason).toBe("no decision before the deadline");
    expect(
      (await admin.post(`/assistant-runs/${runId}/approvals`, { decisions: [{ call_id: "call_1", approved: true }] }))
        .status,
    ).toBe(409);
  }, 30_000); // waits out the 4 s deadline, and its waits allow 25 s more on a loaded machine
});
