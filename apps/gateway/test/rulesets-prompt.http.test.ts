import { isTerminal, terminalLifecycleEvents } from "@loom/contracts/run-lifecycle";
import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { answer, type FakeOpenAI, startFakeOpenAI } from "@loom/testing/fake-openai";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { storeKinds } from "@loom/testing/servers";
import { signAccessToken } from "@loom/testing/tokens";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { expectError } from "./expect-error.ts";

/**
 * What the model provider receives of a run's rulesets (docs/behaviour.md §5),
 * read on a local OpenAI-compatible server scripted by the test: the rules as
 * one system instruction in griptape's ruleset layout, the run's own
 * `ruleset_ids` replacing the assistant's and `additional_ruleset_ids`
 * appending, a JSON-schema rule as `response_format: json_schema`, the same
 * prompt in the run's StartPromptEvent; and a thread's earlier run as earlier
 * turns of the next, both kept as the thread's messages in griptape's format.
 */
describe.each(storeKinds("runs obeying their rulesets"))("runs obey their rulesets (%s store)", (store) => {
  let stack: TestStack;
  let fake: FakeOpenAI;
  let admin: ApiClient;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    stack = await startStack(store, {
      runs: { DEFAULT_MODEL: "openai-compatible:fake-model", OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl },
    });
    admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
  });
  afterAll(async () => {
    await stack?.close();
    await fake?.close();
  });
  beforeEach(() => fake.reply(answer("Understood.")));

  const rule = async (value: string | object) =>
    (await admin.post("/rules", { name: "r", rule: value })).body.rule_id as string;
  /** A ruleset of new rules, in order. */
  const ruleset = async (name: string, rules: Array<string | object>) => {
    const ruleIds = [];
    for (const value of rules) ruleIds.push(await rule(value));
    const res = await admin.post("/rulesets", { name, rule_ids: ruleIds });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return { id: res.body.ruleset_id as string, ruleIds };
  };
  const assistant = async (rulesetIds: string[]) => {
    const res = await admin.post("/assistants", { name: "ruled", ruleset_ids: rulesetIds });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.assistant_id as string;
  };
  /** Runs the assistant to its end: the run's detail and the request the provider received for it. */
  async function runToEnd(assistantId: string, body: Record<string, unknown>) {
    const arrived = fake.nextRequest();
    const res = await admin.post(`/assistants/${assistantId}/runs`, body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const request = await arrived;
    const run = await settled(res.body.assistant_run_id);
    return { run, request: request.body };
  }
  async function settled(runId: string) {
    let run: any;
    await vi.waitFor(
      async () => {
        run = (await admin.get(`/assistant-runs/${runId}`)).body;
        const last = (await admin.get(`/assistant-runs/${runId}/events?offset=0&limit=1000`)).body.events.at(-1);
        expect(isTerminal(run.status), `run ${runId} is ${run.status}`).toBe(true);
        expect(terminalLifecycleEvents.has(last?.type)).toBe(true);
      },
      { timeout: 10_000, interval: 20 },
    );
    return run;
  }
  /** The system instruction of rulesets with string rules, in griptape's layout. */
  const layout = (rulesets: Array<[name: string, rules: string[]]>) =>
    [
      "When responding, always use rules from the following rulesets.",
      ...rulesets.map(([name, rules]) =>
        [`Ruleset name: ${name}`, `"${name}" rules:`, ...rules.flatMap((text, i) => [`Rule #${i + 1}`, text])].join(
          "\n",
        ),
      ),
    ].join("\n\n");

  it("gives the model the assistant's rulesets as one system instruction, in order, before the user message", async () => {
    const tone = await ruleset("Tone", ["Be brief.", "Answer in French."]);
    const safety = await ruleset("Safety", ["Never give medical advice."]);
    const id = await assistant([tone.id, safety.id]);
    const { run, request } = await runToEnd(id, { input: "Hello" });
    expect(run.status).toBe("SUCCEEDED");
    expect(run.ruleset_ids).toEqual([tone.id, safety.id]);
    const instructions = layout([
      ["Tone", ["Be brief.", "Answer in French."]],
      ["Safety", ["Never give medical advice."]],
    ]);
    expect(request.messages).toEqual([
      { role: "system", content: instructions },
      { role: "user", content: "Hello" },
    ]);
    expect(request).not.toHaveProperty("response_format");

    // The run's StartPromptEvent shows the same prompt stack, as griptape messages.
    const events = (await admin.get(`/assistant-runs/${run.assistant_run_id}/events?offset=0&limit=100`)).body.events;
    const stack = events.find((e: { type: string }) => e.type === "StartPromptEvent").payload.prompt_stack;
    expect(stack.messages.map((m: any) => [m.role, m.content[0].artifact.value])).toEqual([
      ["system", instructions],
      ["user", "Hello"],
    ]);
    for (const message of stack.messages)
      expect(Object.keys(message).sort()).toEqual(["content", "role", "type", "usage"]);
  });

  it("a run's ruleset_ids replace the assistant's; additional_ruleset_ids append, without duplicates", async () => {
    const a = await ruleset("A", ["Rule of A."]);
    const b = await ruleset("B", ["Rule of B."]);
    const c = await ruleset("C", ["Rule of C."]);
    const id = await assistant([a.id, b.id]);

    const replaced = await runToEnd(id, { input: "one", ruleset_ids: [c.id] });
    expect(replaced.run.ruleset_ids).toEqual([c.id]);
    expect(replaced.request.messages[0]).toEqual({ role: "system", content: layout([["C", ["Rule of C."]]]) });

    const appended = await runToEnd(id, { input: "two", additional_ruleset_ids: [c.id, a.id] });
    expect(appended.run.ruleset_ids).toEqual([a.id, b.id, c.id]);
    expect(appended.request.messages[0].content).toBe(
      layout([
        ["A", ["Rule of A."]],
        ["B", ["Rule of B."]],
        ["C", ["Rule of C."]],
      ]),
    );

    const none = await runToEnd(id, { input: "three", ruleset_ids: [] });
    expect(none.run.ruleset_ids).toEqual([]);
    expect(none.request.messages).toEqual([{ role: "user", content: "three" }]);
  });

  it("a JSON-schema rule is in the instruction as griptape writes it, and constrains the answer's format", async () => {
    const schema = {
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
      additionalProperties: false,
    };
    const format = await ruleset("Format", ["Name one city.", schema]);
    fake.reply(answer('{"city": "Lyon"}'));
    const { run, request } = await runToEnd(await assistant([format.id]), { input: "A city?" });
    expect(run.status).toBe("SUCCEEDED");
    expect(run.output.value).toBe('{"city": "Lyon"}');
    expect(request.response_format).toMatchObject({ type: "json_schema", json_schema: { schema } });
    expect(request.messages[0].content).toBe(
      layout([
        [
          "Format",
          [
            "Name one city.",
            'Output valid JSON that matches this schema: {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}\nNo markdown, code snippets, code blocks, or backticks.',
          ],
        ],
      ]),
    );
  });

  it("keeps the rules as they were when the run was created", async () => {
    const rules = await ruleset("Snapshot", ["Before the edit."]);
    const id = await assistant([rules.id]);
    const thread = (await admin.post("/threads", { name: "serial" })).body.thread_id;
    // The first run of the thread holds the model; the second waits QUEUED behind it (one run at a time per thread).
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const answers = answer("Done.");
    fake.reply((request, res) => void held.then(() => answers(request, res)));
    const first = fake.nextRequest();
    const firstRun = (await admin.post(`/assistants/${id}/runs`, { input: "first", thread_id: thread })).body;
    await first;
    const secondRun = (await admin.post(`/assistants/${id}/runs`, { input: "second", thread_id: thread })).body;
    expect((await admin.patch(`/rules/${rules.ruleIds[0]}`, { rule: "After the edit." })).status).toBe(200);
    const second = fake.nextRequest();
    release();
    expect((await second).body.messages[0].content).toBe(layout([["Snapshot", ["Before the edit."]]]));
    for (const runId of [firstRun.assistant_run_id, secondRun.assistant_run_id])
      expect((await settled(runId)).status).toBe("SUCCEEDED");
  });

  it("a second run on a thread gets the first run's input and answer as earlier turns, as text; the thread lists both runs as griptape messages", async () => {
    const rules = await ruleset("Thread rules", ["Remember the conversation."]);
    const id = await assistant([rules.id]);
    fake.reply(answer("Nice to meet you, Ada."));
    const first = await runToEnd(id, { input: "My name is Ada.", new_thread: true });
    const threadId = first.run.thread_id as string;
    fake.reply(answer("Your name is Ada."));
    const second = await runToEnd(id, { input: "What is my name?", thread_id: threadId });
    expect(second.request.messages).toEqual([
      { role: "system", content: layout([["Thread rules", ["Remember the conversation."]]]) },
      { role: "user", content: "My name is Ada." },
      { role: "assistant", content: "Nice to meet you, Ada." },
      { role: "user", content: "What is my name?" },
    ]);

    // Each run's {input, output} as griptape's conversation memory stores them: artifact JSON (BaseArtifact.from_json).
    const listed = (await admin.get(`/threads/${threadId}/messages`)).body.messages;
    expect(listed.map((m: any) => [m.index, m.metadata.run_id, JSON.parse(m.input), JSON.parse(m.output)])).toEqual([
      [
        0,
        first.run.assistant_run_id,
        expect.objectContaining({ type: "TextArtifact", value: "My name is Ada." }),
        expect.objectContaining({ type: "TextArtifact", value: "Nice to meet you, Ada." }),
      ],
      [
        1,
        second.run.assistant_run_id,
        expect.objectContaining({ type: "TextArtifact", value: "What is my name?" }),
        expect.objectContaining({ type: "TextArtifact", value: "Your name is Ada." }),
      ],
    ]);
    for (const message of listed)
      for (const artifact of [JSON.parse(message.input), JSON.parse(message.output)])
        expect(Object.keys(artifact).sort()).toEqual(["id", "meta", "name", "reference", "type", "value"]);
  });

  it("400 naming the field and the id of a ruleset that does not exist, and no run is stored", async () => {
    const known = await ruleset("Known", ["Be kind."]);
    const id = await assistant([known.id]);
    const unknown = crypto.randomUUID();
    // Another organization's ruleset is unknown here, exactly like one that never existed.
    const stranger = apiClient(stack.gatewayUrl, await signAccessToken({ sub: `rulesets-stranger-${store}` }));
    const theirs = (await stranger.post("/rulesets", { name: "theirs" })).body.ruleset_id as string;
    for (const [body, path, missing] of [
      [{ ruleset_ids: [known.id, unknown] }, "body.ruleset_ids[1]", unknown],
      [{ additional_ruleset_ids: [theirs] }, "body.additional_ruleset_ids[0]", theirs],
    ] as const) {
      const error = expectError(await admin.post(`/assistants/${id}/runs`, body), 400, "ValidationError");
      expect(error.errors).toEqual([{ path, message: expect.stringContaining(missing) }]);
    }
    expect((await admin.get(`/assistants/${id}/runs`)).body.pagination.total_count).toBe(0);
  });
});
