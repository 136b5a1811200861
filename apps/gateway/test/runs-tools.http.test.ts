import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { isTerminal, terminalLifecycleEvents } from "@loom/contracts/run-lifecycle";
import { createLogger } from "@loom/telemetry/logger";
import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { anthropicAnswer, anthropicToolUse } from "@loom/testing/fake-anthropic";
import { answer, callTools, type FakeOpenAI, inTurn, type Reply, startFakeOpenAI } from "@loom/testing/fake-openai";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { type McpTestServer, startMcpServer } from "@loom/testing/mcp-server";
import { storeKinds } from "@loom/testing/servers";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";

/** A tool call as a test scripts it: the call's id, the model tool's name, its input. */
interface ScriptedCall {
  id: string;
  name: string;
  input: Record<string, unknown>;
}

/** A tool result as the model received it in the next request. */
interface SentResult {
  id: string;
  text: string;
  isError: boolean;
}

/** The two protocols the scripted server speaks, with what a test needs of each. */
const providers = [
  {
    name: "OpenAI-compatible",
    settings: (url: string) => ({ DEFAULT_MODEL: "openai-compatible:fake-model", OPENAI_COMPATIBLE_BASE_URL: url }),
    callTools: (calls: ScriptedCall[]): Reply =>
      callTools(calls.map((c) => ({ id: c.id, name: c.name, arguments: c.input }))),
    answer: (text: string): Reply => answer(text),
    toolNames: (body: any): string[] => (body.tools ?? []).map((t: any) => t.function.name),
    results: (body: any): SentResult[] =>
      body.messages
        .filter((m: any) => m.role === "tool")
        .map((m: any) => ({ id: m.tool_call_id, text: m.content, isError: false })),
  },
  {
    name: "Anthropic",
    settings: (url: string) => ({
      DEFAULT_MODEL: "anthropic:claude-haiku-4-5",
      ANTHROPIC_API_KEY: "test-anthropic-key",
      ANTHROPIC_BASE_URL: url,
    }),
    callTools: (calls: ScriptedCall[]): Reply => anthropicToolUse(calls),
    answer: (text: string): Reply => anthropicAnswer(text),
    toolNames: (body: any): string[] => (body.tools ?? []).map((t: any) => t.name),
    results: (body: any): SentResult[] =>
      body.messages
        .flatMap((m: any) => (Array.isArray(m.content) ? m.content : []))
        .filter((c: any) => c.type === "tool_result")
        .map((c: any) => ({
          id: c.tool_use_id,
          text: typeof c.content === "string" ? c.content : c.content.map((p: any) => p.text).join(""),
          isError: c.is_error === true,
        })),
  },
] as const;

const cases = storeKinds("runs with tools").flatMap((store) =>
  providers.map((provider) => [provider.name, store, provider] as const),
);

/** Exactly griptape's keys (docs/behaviour.md §6): the driver rebuilds each payload and raises on any other. */
const base = ["type", "id", "timestamp", "meta"];
const taskKeys = [
  ...base,
  "task_id",
  "task_parent_ids",
  "task_child_ids",
  "task_input",
  "task_output",
  "subtask_parent_task_id",
  "subtask_thought",
  "subtask_actions",
];
const eventKeys: Record<string, string[]> = {
  StartStructureRunEvent: [...base, "structure_id", "input_task_input", "input_task_output"],
  StartPromptEvent: [...base, "model", "prompt_stack"],
  TextChunkEvent: [...base, "index", "token"],
  ActionChunkEvent: [...base, "index", "partial_input", "tag", "name", "path"],
  FinishPromptEvent: [...base, "model", "result", "input_token_count", "output_token_count"],
  StartActionsSubtaskEvent: taskKeys,
  FinishActionsSubtaskEvent: taskKeys,
  FinishStructureRunEvent: [...base, "structure_id", "output_task_input", "output_task_output"],
};
const artifactKeys: Record<string, string[]> = {
  TextArtifact: ["type", "id", "reference", "meta", "name", "value"],
  ErrorArtifact: ["type", "id", "reference", "meta", "name", "value"],
  JsonArtifact: ["type", "id", "reference", "meta", "name", "value"],
  ImageArtifact: ["type", "id", "reference", "meta", "name", "value", "format", "width", "height"],
  ListArtifact: ["type", "id", "reference", "meta", "name", "value", "item_separator", "validate_uniform_types"],
};
const sorted = (keys: string[]) => [...keys].sort();

function expectArtifact(artifact: any): void {
  expect(sorted(Object.keys(artifact)), artifact.type).toEqual(sorted(artifactKeys[artifact.type]!));
  if (artifact.type === "ListArtifact") artifact.value.forEach(expectArtifact);
}

/** Every ASSISTANT payload has exactly its griptape keys, its artifacts theirs, its actions only truthy keys. */
function expectGriptapeKeys(events: any[]): void {
  for (const { type, payload } of events.filter((e) => e.origin === "ASSISTANT")) {
    expect(eventKeys[type], `a griptape event type: ${type}`).toBeDefined();
    expect(sorted(Object.keys(payload)), type).toEqual(sorted(eventKeys[type]!));
    for (const field of ["task_input", "task_output", "input_task_input", "output_task_input", "output_task_output"])
      if (payload[field]) expectArtifact(payload[field]);
    for (const action of payload.subtask_actions ?? []) {
      for (const value of Object.values(action)) expect(Boolean(value)).toBe(true);
      expect(Object.keys(action).every((k) => ["tag", "name", "path", "input"].includes(k))).toBe(true);
    }
  }
}

describe.each(cases)("runs with tools (%s, %s store)", (_name, store, provider) => {
  let stack: TestStack;
  let admin: ApiClient;
  let model: FakeOpenAI;
  let mcp: McpTestServer;
  let assistantId: string;
  const created: string[] = [];
  // Every line every service and the gateway write, at the most detailed level.
  let logged = "";
  const logger = createLogger("test", "trace", {
    format: "json",
    destination: new Writable({ write: (chunk: Buffer, _encoding, done) => ((logged += chunk.toString()), done()) }),
  });

  beforeAll(async () => {
    model = await startFakeOpenAI();
    mcp = await startMcpServer();
    stack = await startStack(store, {
      runs: {
        ...provider.settings(model.baseUrl),
        RUN_TOOL_CALL_TIMEOUT_MS: 3_000,
        RUN_MAX_STEPS: 3,
        RUN_TOOL_RESULT_MAX_CHARS: 200,
      },
      tools: { TOOL_ALLOWED_HOSTS: "127.0.0.1" },
      logger,
    });
    admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
    const tool = (await admin.post("/tools", { name: "Calc", server: { url: mcp.url, transport: "mcp" } })).body;
    assistantId = (await admin.post("/assistants", { name: "acting", tool_ids: [tool.tool_id] })).body.assistant_id;
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
  // A run still going would take the next test's script: each ends before the next starts.
  afterEach(async () => {
    for (const id of created.splice(0)) {
      const ended = await settled(id, 3_000).then(
        () => true,
        () => false,
      );
      if (!ended) {
        await admin.post(`/assistant-runs/${id}/cancel`);
        await settled(id);
      }
    }
  });

  const run = async (body: Record<string, unknown> = {}, assistant = assistantId) => {
    const res = await admin.post(`/assistants/${assistant}/runs`, { input: "go", ...body });
    expect(res.status).toBe(201);
    created.push(res.body.assistant_run_id);
    return res.body.assistant_run_id as string;
  };
  /** The run and its events once it has ended and its log has too. */
  async function settled(runId: string, timeoutMs = 10_000) {
    let result: { run: any; events: any[] } = { run: undefined, events: [] };
    await vi.waitFor(
      async () => {
        const run = (await admin.get(`/assistant-runs/${runId}`)).body;
        const events = (await admin.get(`/assistant-runs/${runId}/events?offset=0&limit=1000`)).body.events;
        expect(isTerminal(run.status), `run ${runId} is ${run.status}`).toBe(true);
        expect(terminalLifecycleEvents.has(events.at(-1)?.type ?? "")).toBe(true);
        result = { run, events };
      },
      { timeout: timeoutMs, interval: 20 },
    );
    return result;
  }
  const types = (events: any[]) => events.filter((e) => e.origin === "ASSISTANT").map((e) => e.type);
  const payloadsOf = (events: any[], type: string) => events.filter((e) => e.type === type).map((e) => e.payload);

  it("a tool's secret header: the MCP server gets the value; no answer, event or log line of the run holds it", async () => {
    const value = `sk-${randomUUID()}`;
    const secretId = (await admin.post("/secrets", { name: "calc-token", value })).body.secret_id as string;
    const server = { url: mcp.url, transport: "mcp", headers: { Authorization: { secret_ref: secretId } } };
    const tool = (await admin.post("/tools", { name: "Sealed", server })).body;
    const assistant = (await admin.post("/assistants", { name: "sealed", tool_ids: [tool.tool_id] })).body.assistant_id;
    model.reply(
      inTurn(provider.callTools([{ id: "call_s", name: "Sealed_add", input: { a: 1, b: 1 } }]), provider.answer("2.")),
    );
    const runId = await run({ stream: true }, assistant);
    const { run: done, events } = await settled(runId);
    expect(done.status).toBe("SUCCEEDED");
    expect(mcp.calls.map((c) => [c.tool, c.headers.authorization])).toEqual([["add", value]]);
    const toolRuns = (await admin.get(`/tools/${tool.tool_id}/runs`)).body;
    const said = JSON.stringify([done, events, toolRuns, model.requests.map((r) => r.body)]);
    expect(said).not.toContain(value);
    expect(logged).toContain('"procedure":"InvokeActivity"'); // the capture sees the call's lines
    expect(logged).not.toContain(value);
  });

  it("one call: the tool runs on its MCP server, its result goes back to the model, whose answer is the output", async () => {
    model.reply(
      inTurn(provider.callTools([{ id: "call_1", name: "Calc_add", input: { a: 2, b: 3 } }]), provider.answer("5.")),
    );
    const { run: done, events } = await settled(await run());
    expect(done.status).toBe("SUCCEEDED");
    expect(done.output.value).toBe("5.");
    expect(mcp.calls.map((c) => [c.tool, c.arguments])).toEqual([["add", { a: 2, b: 3 }]]);
    expect(model.requests).toHaveLength(2);
    expect(provider.toolNames(model.requests[0]!.body)).toEqual(
      expect.arrayContaining(["Calc_add", "Calc_json", "Calc_image", "Calc_fail", "Calc_hang", "Calc_huge"]),
    );
    expect(provider.results(model.requests[1]!.body)).toEqual([{ id: "call_1", text: "5", isError: false }]);
    expect(types(events)).toEqual([
      "StartStructureRunEvent",
      "StartPromptEvent",
      "FinishPromptEvent",
      "StartActionsSubtaskEvent",
      "FinishActionsSubtaskEvent",
      "StartPromptEvent",
      "FinishPromptEvent",
      "FinishStructureRunEvent",
    ]);
    expectGriptapeKeys(events);
    const [start] = payloadsOf(events, "StartActionsSubtaskEvent");
    expect(start.subtask_actions).toEqual([{ tag: "call_1", name: "Calc", path: "add", input: { a: 2, b: 3 } }]);
    expect(start.task_output).toBeNull();
    const [finish] = payloadsOf(events, "FinishActionsSubtaskEvent");
    expect(finish.task_id).toBe(start.task_id);
    expect(finish.task_output.type).toBe("ListArtifact");
    expect(finish.task_output.value).toMatchObject([{ type: "TextArtifact", name: "call_1 output", value: "5" }]);
    // The second prompt carries the call and its result, as griptape's prompt stack does.
    const second = payloadsOf(events, "StartPromptEvent")[1].prompt_stack.messages.slice(-2);
    expect(second.map((m: any) => m.content.map((c: any) => c.type))).toEqual([
      ["ActionCallMessageContent"],
      ["ActionResultMessageContent"],
    ]);
    expect(payloadsOf(events, "FinishStructureRunEvent")[0].output_task_output).toMatchObject({
      type: "TextArtifact",
      value: "5.",
    });
  });

  it("parallel calls: every call of one step runs at once, each result back under its own id", async () => {
    model.reply(
      inTurn(
        provider.callTools([
          { id: "call_a", name: "Calc_add", input: { a: 1, b: 1 } },
          { id: "call_b", name: "Calc_json", input: {} },
          { id: "call_c", name: "Calc_image", input: {} },
        ]),
        provider.answer("done"),
      ),
    );
    const { run: done, events } = await settled(await run());
    expect(done.status).toBe("SUCCEEDED");
    expect(mcp.calls.map((c) => c.tool).sort()).toEqual(["add", "image", "json"]);
    const sent = provider.results(model.requests[1]!.body);
    expect(sent.map((r) => r.id)).toEqual(["call_a", "call_b", "call_c"]);
    expect(sent[0]!.text).toBe("2");
    expect(JSON.parse(sent[1]!.text)).toMatchObject({ total: 1 });
    expect(sent[2]!.text).toMatch(/^Image, format: png, size: \d+ bytes$/);
    expectGriptapeKeys(events);
    // Empty inputs are left out of the actions, as griptape's actions_to_dicts does.
    expect(payloadsOf(events, "StartActionsSubtaskEvent")[0].subtask_actions).toEqual([
      { tag: "call_a", name: "Calc", path: "add", input: { a: 1, b: 1 } },
      { tag: "call_b", name: "Calc", path: "json" },
      { tag: "call_c", name: "Calc", path: "image" },
    ]);
    const outputs = payloadsOf(events, "FinishActionsSubtaskEvent")[0].task_output.value;
    expect(outputs.map((o: any) => [o.type, o.name])).toEqual([
      ["TextArtifact", "call_a output"],
      ["JsonArtifact", "call_b output"],
      ["ImageArtifact", "call_c output"],
    ]);
  });

  it("a failing tool: its error is the call's result for the model, and the run goes on to its answer", async () => {
    model.reply(
      inTurn(
        provider.callTools([
          { id: "call_f", name: "Calc_fail", input: {} },
          { id: "call_x", name: "Nope_nothing", input: {} },
        ]),
        provider.answer("It failed."),
      ),
    );
    const { run: done, events } = await settled(await run());
    expect(done.status).toBe("SUCCEEDED");
    const sent = provider.results(model.requests[1]!.body);
    expect(sent[0]!.text).toContain("boom: the tool failed");
    expect(sent[1]!.text).toBe("there is no tool named Nope_nothing");
    if (provider.name === "Anthropic") expect(sent.map((r) => r.isError)).toEqual([true, true]);
    const outputs = payloadsOf(events, "FinishActionsSubtaskEvent")[0].task_output.value;
    expect(outputs.map((o: any) => o.type)).toEqual(["ErrorArtifact", "ErrorArtifact"]);
    expectGriptapeKeys(events);
  });

  it("a hanging tool is stopped at RUN_TOOL_CALL_TIMEOUT (its server sees the abort); the model gets the timeout", async () => {
    model.reply(inTurn(provider.callTools([{ id: "call_h", name: "Calc_hang", input: {} }]), provider.answer("ok")));
    const aborted = mcp.hangAborted();
    const started = Date.now();
    const { run: done } = await settled(await run());
    expect(done.status).toBe("SUCCEEDED");
    expect(Date.now() - started).toBeGreaterThanOrEqual(3_000);
    await aborted;
    expect(provider.results(model.requests[1]!.body)[0]!.text).toBe(
      "the tool call took longer than 3000 ms and was stopped",
    );
  });

  it("a result longer than RUN_TOOL_RESULT_MAX_CHARS reaches the model cut, with a note; the event keeps it whole", async () => {
    model.reply(
      inTurn(provider.callTools([{ id: "call_z", name: "Calc_huge", input: { bytes: 5_000 } }]), provider.answer("ok")),
    );
    const { events } = await settled(await run());
    const text = provider.results(model.requests[1]!.body)[0]!.text;
    expect(text).toBe(`${"x".repeat(200)}\n[Loom: this result was cut to its first 200 of 5000 characters]`);
    expect(payloadsOf(events, "FinishActionsSubtaskEvent")[0].task_output.value[0].value).toHaveLength(5_000);
  });

  it("the step limit: a model still calling tools at RUN_MAX_STEPS fails the run, its last calls not made", async () => {
    model.reply(provider.callTools([{ id: "call_l", name: "Calc_add", input: { a: 1, b: 2 } }]));
    const { run: done, events } = await settled(await run());
    expect(done.status).toBe("FAILED");
    expect(done.status_detail).toMatchObject({ reason: "MaxStepsExceeded" });
    expect(model.requests).toHaveLength(3);
    expect(mcp.calls).toHaveLength(2);
    expect(types(events).filter((t) => t === "FinishActionsSubtaskEvent")).toHaveLength(2);
    expectGriptapeKeys(events);
  });

  it("cancel during a call: CANCELLED at once, and the tool's server sees its request aborted", async () => {
    model.reply(provider.callTools([{ id: "call_c", name: "Calc_hang", input: {} }]));
    const hanging = mcp.hangStarted();
    const aborted = mcp.hangAborted();
    const id = await run();
    await hanging;
    const cancelled = await admin.post(`/assistant-runs/${id}/cancel`);
    expect(cancelled.body.status).toBe("CANCELLED");
    await aborted;
    const { run: done, events } = await settled(id);
    expect(done.status).toBe("CANCELLED");
    expect(types(events)).not.toContain("FinishActionsSubtaskEvent");
    expect(model.requests).toHaveLength(1);
  });

  it("streams: action chunks name the call first, then carry its input's JSON, which adds up", async () => {
    model.reply(
      inTurn(
        provider.callTools([{ id: "call_s", name: "Calc_add", input: { a: 20, b: 22 } }]),
        provider.answer("It is 42."),
      ),
    );
    const { run: done, events } = await settled(await run({ stream: true }));
    expect(done.output.value).toBe("It is 42.");
    expectGriptapeKeys(events);
    const chunks = payloadsOf(events, "ActionChunkEvent");
    expect(chunks[0]).toMatchObject({ tag: "call_s", name: "Calc", path: "add", partial_input: null });
    expect(chunks.slice(1).every((c: any) => c.tag === null && c.name === null && c.path === null)).toBe(true);
    expect(JSON.parse(chunks.map((c: any) => c.partial_input ?? "").join(""))).toEqual({ a: 20, b: 22 });
    const order = types(events);
    expect(order.indexOf("ActionChunkEvent")).toBeLessThan(order.indexOf("StartActionsSubtaskEvent"));
    expect(order.filter((t) => t === "TextChunkEvent").length).toBeGreaterThan(0);
  });

  it("a tool whose server cannot list its activities is left out, and a SYSTEM event says so", async () => {
    const down = (
      await admin.post("/tools", { name: "Down", server: { url: "http://127.0.0.1:9/mcp", transport: "mcp" } })
    ).body.tool_id;
    model.reply(provider.answer("without it"));
    const { run: done, events } = await settled(await run({ additional_tool_ids: [down] }));
    expect(done.status).toBe("SUCCEEDED");
    const note = events.find((e) => e.type === "AssistantRunToolUnavailable");
    expect(note).toMatchObject({ origin: "SYSTEM", payload: { tool_id: down } });
    expect(note.payload.error).toEqual(expect.any(String));
    expect(provider.toolNames(model.requests[0]!.body)).not.toContain("Down_add");
    expect(provider.toolNames(model.requests[0]!.body)).toContain("Calc_add");
  });
});
