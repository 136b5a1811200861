import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { anthropicAnswer, anthropicError, anthropicToolUse } from "@loom/testing/fake-anthropic";
import {
  answer,
  callTools,
  cutAfter,
  type FakeOpenAI,
  failWith,
  hang,
  startFakeOpenAI,
} from "@loom/testing/fake-openai";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { openSse } from "@loom/testing/sse";
import { within } from "@loom/testing/within";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";

/**
 * Key sets of griptape 1.13's serialization (griptape/common/prompt_stack,
 * griptape/artifacts, ToolAction): Message.from_dict and
 * DeltaMessage.from_dict rebuild exactly these.
 */
const keys = {
  message: ["content", "role", "type", "usage"],
  usage: ["input_tokens", "output_tokens", "type"],
  textContent: ["artifact", "type"],
  artifact: ["id", "meta", "name", "reference", "type", "value"],
  toolAction: ["input", "name", "path", "tag", "type"],
  deltaMessage: ["content", "role", "type", "usage"],
  textDelta: ["index", "text", "type"],
  actionCallDelta: ["index", "name", "partial_input", "path", "tag", "type"],
};
const keysOf = (o: object) => Object.keys(o).sort();

const textArtifact = (value: string) => ({
  type: "TextArtifact",
  id: "a1",
  reference: null,
  meta: {},
  name: "a1",
  value,
});
const userText = (text: string) => ({
  type: "Message",
  role: "user",
  content: [{ type: "TextMessageContent", artifact: textArtifact(text) }],
  usage: { type: "Message.Usage", input_tokens: null, output_tokens: null },
});
const calculator = {
  name: "Calculator",
  activities: [
    {
      name: "calculate",
      description: "Calculates an expression",
      json_schema: {
        type: "object",
        properties: {
          values: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"] },
        },
        required: ["values"],
      },
    },
  ],
};
const body = (over: Record<string, unknown> = {}) => ({
  messages: [{ ...userText("You are terse."), role: "system" }, userText("Hi there")],
  tools: [],
  output_schema: null,
  driver_configuration: {
    max_tokens: 50,
    temperature: 0.2,
    use_native_tools: true,
    structured_output_strategy: "native",
    extra_params: {},
  },
  ...over,
});

describe("chat messages over HTTP", () => {
  let stack: TestStack;
  let fake: FakeOpenAI;
  /** The same scripted server, answering in the Anthropic Messages protocol. */
  let anthropic: FakeOpenAI;
  let admin: ApiClient;
  let auth: Record<string, string>;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    anthropic = await startFakeOpenAI();
    stack = await startStack("sqlite", {
      memoryBus: true,
      runs: {
        DEFAULT_MODEL: "openai-compatible:fake-model",
        OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
        CHAT_MODELS: "loom:echo, anthropic:claude-haiku-4-5",
        ANTHROPIC_API_KEY: "test-anthropic-key",
        ANTHROPIC_BASE_URL: anthropic.baseUrl,
        CHAT_TIMEOUT_MS: 2_000,
      },
    });
    admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
    auth = { authorization: `Bearer ${stack.bootstrapKey}` };
  });
  afterAll(async () => {
    await stack?.close();
    await fake?.close();
    await anthropic?.close();
  });
  beforeEach(() => fake.reply(answer("Hello there, world!")));

  function expectGriptapeMessage(message: any) {
    expect(keysOf(message)).toEqual(keys.message);
    expect(message.type).toBe("Message");
    expect(keysOf(message.usage)).toEqual(keys.usage);
    for (const item of message.content) {
      expect(keysOf(item)).toEqual(keys.textContent);
      expect(keysOf(item.artifact)).toEqual(keys.artifact);
      expect(item.artifact.reference).toBeNull();
      if (item.type === "ActionCallMessageContent") expect(keysOf(item.artifact.value)).toEqual(keys.toolAction);
    }
  }

  it("answers 201 with the model's reply as a griptape Message, with real usage; settings reach the provider", async () => {
    const res = await admin.post("/chat/messages", body());
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expectGriptapeMessage(res.body);
    expect(res.body.role).toBe("assistant");
    expect(res.body.content).toHaveLength(1);
    expect(res.body.content[0].type).toBe("TextMessageContent");
    expect(res.body.content[0].artifact.type).toBe("TextArtifact");
    expect(res.body.content[0].artifact.value).toBe("Hello there, world!");
    expect(res.body.usage).toEqual({ type: "Message.Usage", input_tokens: 11, output_tokens: 7 });
    const sent = fake.requests.at(-1)!.body;
    expect(sent.model).toBe("fake-model");
    expect(sent.max_tokens).toBe(50);
    expect(sent.temperature).toBe(0.2);
    expect(sent.messages).toEqual([
      { role: "system", content: "You are terse." },
      { role: "user", content: "Hi there" },
    ]);
  });

  it("runs a whole agent loop: a tool call comes back as ActionCallMessageContent, its result goes back to the model", async () => {
    fake.reply(
      callTools([{ id: "call_abc", name: "Calculator_calculate", arguments: { values: { expression: "6*7" } } }]),
    );
    const first = await admin.post("/chat/messages", body({ tools: [calculator] }));
    expect(first.status).toBe(201);
    expectGriptapeMessage(first.body);
    const toolsSent = fake.requests.at(-1)!.body.tools;
    expect(toolsSent).toEqual([
      {
        type: "function",
        function: {
          name: "Calculator_calculate",
          description: "Calculates an expression",
          parameters: calculator.activities[0]!.json_schema,
        },
      },
    ]);
    const [callContent] = first.body.content;
    expect(callContent.type).toBe("ActionCallMessageContent");
    expect(callContent.artifact.type).toBe("ActionArtifact");
    expect(callContent.artifact.value).toEqual({
      type: "ToolAction",
      tag: "call_abc",
      name: "Calculator",
      path: "calculate",
      input: { values: { expression: "6*7" } },
    });

    fake.reply(answer("It is 42."));
    const result = {
      type: "Message",
      role: "user",
      content: [
        { type: "ActionResultMessageContent", artifact: textArtifact("42"), action: callContent.artifact.value },
      ],
      usage: { type: "Message.Usage", input_tokens: null, output_tokens: null },
    };
    const second = await admin.post(
      "/chat/messages",
      body({ tools: [calculator], messages: [...body().messages, first.body, result] }),
    );
    expect(second.status).toBe(201);
    expect(second.body.content[0].artifact.value).toBe("It is 42.");
    const sent = fake.requests.at(-1)!.body.messages;
    expect(sent.at(-2)).toMatchObject({
      role: "assistant",
      tool_calls: [{ id: "call_abc", type: "function", function: { name: "Calculator_calculate" } }],
    });
    expect(JSON.parse(sent.at(-2).tool_calls[0].function.arguments)).toEqual({ values: { expression: "6*7" } });
    expect(sent.at(-1)).toEqual({ role: "tool", tool_call_id: "call_abc", content: "42" });
  });

  it("sends a JSON tool result as JSON, and loom:echo answers a tool result with its text", async () => {
    const action = { type: "ToolAction", tag: "call_j", name: "Calculator", path: "calculate", input: {} };
    const call = {
      type: "Message",
      role: "assistant",
      content: [
        {
          type: "ActionCallMessageContent",
          artifact: { type: "ActionArtifact", id: "c1", reference: null, meta: {}, name: "c1", value: action },
        },
      ],
      usage: { type: "Message.Usage", input_tokens: 1, output_tokens: 1 },
    };
    const result = {
      ...userText(""),
      content: [
        {
          type: "ActionResultMessageContent",
          artifact: { type: "JsonArtifact", id: "j1", reference: null, meta: {}, name: "j1", value: { result: 42 } },
          action,
        },
      ],
    };
    const res = await admin.post(
      "/chat/messages",
      body({ tools: [calculator], messages: [userText("6*7?"), call, result] }),
    );
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(fake.requests.at(-1)!.body.messages.at(-1)).toEqual({
      role: "tool",
      tool_call_id: "call_j",
      content: '{"result":42}',
    });
    const echoed = await admin.post(
      "/chat/messages",
      body({
        tools: [calculator],
        messages: [userText("6*7?"), call, result],
        driver_configuration: { model: "loom:echo" },
      }),
    );
    expect(echoed.body.content[0].artifact.value).toBe('Echo: {"result":42}');
  });

  it("sends no tools with use_native_tools false (griptape then prompts for them)", async () => {
    const res = await admin.post(
      "/chat/messages",
      body({ tools: [calculator], driver_configuration: { use_native_tools: false } }),
    );
    expect(res.status).toBe(201);
    expect(fake.requests.at(-1)!.body.tools).toBeUndefined();
  });

  it("sends images as base64 image parts", async () => {
    const png = Buffer.from("fake png bytes").toString("base64");
    const image = {
      type: "ImageArtifact",
      id: "i1",
      reference: null,
      meta: {},
      name: "i1.png",
      value: png,
      format: "png",
      width: 1,
      height: 1,
    };
    const message = {
      ...userText("What is this?"),
      content: [{ type: "ImageMessageContent", artifact: image }, userText("What is this?").content[0]],
    };
    const res = await admin.post("/chat/messages", body({ messages: [message] }));
    expect(res.status).toBe(201);
    const [part] = fake.requests.at(-1)!.body.messages[0].content;
    expect(part.type).toBe("image_url");
    expect(part.image_url.url).toBe(`data:image/png;base64,${png}`);
  });

  it("structured output: native sends the schema as response_format, tool forces the schema's tool", async () => {
    const schema = {
      type: "object",
      properties: { answer: { type: "string" } },
      required: ["answer"],
      additionalProperties: false,
    };
    fake.reply(answer('{"answer":"yes"}'));
    const native = await admin.post("/chat/messages", body({ output_schema: schema }));
    expect(native.status).toBe(201);
    expect(JSON.parse(native.body.content[0].artifact.value)).toEqual({ answer: "yes" });
    expect(fake.requests.at(-1)!.body.response_format).toMatchObject({ type: "json_schema", json_schema: { schema } });

    fake.reply(answer('{"answer":42}'));
    const invalid = await admin.post("/chat/messages", body({ output_schema: schema }));
    expect(invalid.status).toBe(503);

    fake.reply(
      callTools([{ id: "call_so", name: "StructuredOutputTool_provide_output", arguments: { answer: "yes" } }]),
    );
    const viaTool = await admin.post(
      "/chat/messages",
      body({
        output_schema: schema,
        driver_configuration: { ...body().driver_configuration, structured_output_strategy: "tool" },
      }),
    );
    expect(viaTool.status).toBe(201);
    expect(fake.requests.at(-1)!.body.tool_choice).toEqual({
      type: "function",
      function: { name: "StructuredOutputTool_provide_output" },
    });
    expect(viaTool.body.content[0].artifact.value).toMatchObject({
      name: "StructuredOutputTool",
      path: "provide_output",
      input: { answer: "yes" },
    });

    const rule = await admin.post(
      "/chat/messages",
      body({
        output_schema: schema,
        driver_configuration: { ...body().driver_configuration, structured_output_strategy: "rule" },
      }),
    );
    expect(rule.status).toBe(201);
    expect(fake.requests.at(-1)!.body.response_format).toBeUndefined();
  });

  it("refuses bad input with 400 and paths, and accepts null for optional fields", async () => {
    const missing = await admin.post("/chat/messages", {});
    expect(missing.status).toBe(400);
    expect(missing.body.errors.map((e: { path: string }) => e.path).sort()).toEqual([
      "body.driver_configuration",
      "body.messages",
      "body.tools",
    ]);
    const badRole = await admin.post("/chat/messages", body({ messages: [{ ...userText("hi"), role: "wizard" }] }));
    expect(badRole.status).toBe(400);
    expect(badRole.body.errors[0].path).toBe("body.messages[0].role");
    const unknownModel = await admin.post(
      "/chat/messages",
      body({ driver_configuration: { model: "openai-compatible:other" } }),
    );
    expect(unknownModel.status).toBe(400);
    expect(unknownModel.body.errors[0]).toMatchObject({ path: "body.driver_configuration.model" });
    expect(unknownModel.body.errors[0].message).toContain(
      "openai-compatible:fake-model, loom:echo, anthropic:claude-haiku-4-5",
    );
    const extra = await admin.post(
      "/chat/messages",
      body({ driver_configuration: { extra_params: { logit_bias: {} } } }),
    );
    expect(extra.status).toBe(400);
    expect(extra.body.errors[0].path).toBe("body.driver_configuration.extra_params.logit_bias");
    const requests = fake.requests.length;
    const nulls = await admin.post(
      "/chat/messages",
      body({
        driver_configuration: {
          model: null,
          max_tokens: null,
          temperature: null,
          use_native_tools: null,
          structured_output_strategy: null,
          extra_params: null,
        },
      }),
    );
    expect(nulls.status).toBe(201);
    expect(fake.requests.length).toBe(requests + 1);
  });

  it("takes an empty model name as absent: DEFAULT_MODEL answers", async () => {
    const requests = fake.requests.length;
    const empty = await admin.post("/chat/messages", body({ driver_configuration: { model: "" } }));
    expect(empty.status).toBe(201);
    expect(fake.requests.length).toBe(requests + 1);
    expect(fake.requests.at(-1)!.body).toMatchObject({ model: "fake-model" });
  });

  it("passes allowed extra_params to the provider", async () => {
    const res = await admin.post(
      "/chat/messages",
      body({ driver_configuration: { extra_params: { top_p: 0.5, seed: 7, stop: ["END"] } } }),
    );
    expect(res.status).toBe(201);
    expect(fake.requests.at(-1)!.body).toMatchObject({ top_p: 0.5, seed: 7, stop: ["END"] });
  });

  it("answers a provider's rejection with 400 and its failure with 503", async () => {
    fake.reply(failWith(400, "bad tool schema"));
    const rejected = await admin.post("/chat/messages", body());
    expect(rejected.status).toBe(400);
    expect(rejected.body.errors[0].message).toContain("bad tool schema");
    fake.reply(failWith(500));
    const down = await admin.post("/chat/messages", body());
    expect(down.status).toBe(503);
  });

  it("a provider that does not answer within CHAT_TIMEOUT_MS is 503, and its request is aborted", async () => {
    fake.reply(hang());
    const arrived = fake.nextRequest();
    const res = await admin.post("/chat/messages", body());
    expect(res.status).toBe(503);
    expect(res.body.errors[0].message).toBe("the model did not answer within 2 s");
    await (await arrived).closedEarly;
  });

  it("loom:echo answers offline, and calls a tool when asked", async () => {
    const echo = { ...body().driver_configuration, model: "loom:echo" };
    const requests = fake.requests.length;
    const text = await admin.post("/chat/messages", body({ driver_configuration: echo }));
    expect(text.status).toBe(201);
    expect(text.body.content[0].artifact.value).toBe("Echo: Hi there");
    const call = await admin.post(
      "/chat/messages",
      body({
        driver_configuration: echo,
        tools: [calculator],
        messages: [userText('call Calculator_calculate {"values":{"expression":"1+1"}}')],
      }),
    );
    expectGriptapeMessage(call.body);
    expect(call.body.content[0].artifact.value).toMatchObject({
      type: "ToolAction",
      name: "Calculator",
      path: "calculate",
      input: { values: { expression: "1+1" } },
    });
    expect(fake.requests.length).toBe(requests);
  });

  describe("the stream", () => {
    const url = () => `${stack.gatewayUrl}/chat/messages/stream`;

    function expectDeltaFrames(frames: any[]) {
      for (const frame of frames) {
        expect(keysOf(frame)).toEqual(keys.deltaMessage);
        expect(frame.type).toBe("DeltaMessage");
        expect(keysOf(frame.usage)).toEqual(keys.usage);
      }
    }

    it("streams text deltas, then exactly one usage frame, then closes", async () => {
      const sse = await openSse(url(), auth, body());
      expect(sse.status).toBe(200);
      expect(sse.headers.get("content-type")).toMatch(/^text\/event-stream/);
      await sse.ended;
      const frames = sse.events.map((e) => JSON.parse(e.data));
      expectDeltaFrames(frames);
      const deltas = frames.slice(0, -1);
      for (const d of deltas) expect(keysOf(d.content)).toEqual(keys.textDelta);
      expect(deltas.map((d) => d.content.text).join("")).toBe("Hello there, world!");
      expect(deltas.every((d) => d.content.index === 0)).toBe(true);
      expect(frames.at(-1)).toEqual({
        type: "DeltaMessage",
        role: "assistant",
        content: null,
        usage: { type: "Message.Usage", input_tokens: 11, output_tokens: 7 },
      });
      expect(frames.filter((f) => f.content === null)).toHaveLength(1);
    });

    it("streams tool calls as ActionCallDeltaMessageContent that griptape reassembles", async () => {
      fake.reply(
        callTools([{ id: "call_s1", name: "Calculator_calculate", arguments: { values: { expression: "2+2" } } }]),
      );
      const sse = await openSse(url(), auth, body({ tools: [calculator] }));
      await sse.ended;
      const frames = sse.events.map((e) => JSON.parse(e.data));
      expectDeltaFrames(frames);
      const deltas = frames.slice(0, -1).map((f) => f.content);
      for (const d of deltas) expect(keysOf(d)).toEqual(keys.actionCallDelta);
      expect(deltas[0]).toMatchObject({ tag: "call_s1", name: "Calculator", path: "calculate" });
      expect(JSON.parse(deltas.map((d) => d.partial_input ?? "").join(""))).toEqual({ values: { expression: "2+2" } });
      expect(new Set(deltas.map((d) => d.index)).size).toBe(1);
      expect(frames.at(-1).usage).toEqual({ type: "Message.Usage", input_tokens: 20, output_tokens: 9 });
    });

    it("streams text and then two tool calls in one reply: text at index 0, each call at an index of its own; the plain reply carries all three", async () => {
      const twoCalls = [
        { id: "call_t1", name: "Calculator_calculate", arguments: { values: { expression: "1+1" } } },
        { id: "call_t2", name: "Calculator_calculate", arguments: { values: { expression: "2+2" } } },
      ];
      fake.reply(callTools(twoCalls, undefined, "Let me compute."));
      const sse = await openSse(url(), auth, body({ tools: [calculator] }));
      await sse.ended;
      const frames = sse.events.map((e) => JSON.parse(e.data));
      expectDeltaFrames(frames);
      const deltas = frames.slice(0, -1).map((f) => f.content);
      const texts = deltas.filter((d) => d.type === "TextDeltaMessageContent");
      const calls = deltas.filter((d) => d.type === "ActionCallDeltaMessageContent");
      expect(texts.map((d) => d.text).join("")).toBe("Let me compute.");
      expect(new Set(texts.map((d) => d.index))).toEqual(new Set([0]));
      type CallDelta = { index: number; tag?: string; partial_input?: string };
      const byIndex = Map.groupBy(calls as CallDelta[], (d) => d.index);
      expect([...byIndex.keys()].sort()).toEqual([1, 2]);
      expect(
        [...byIndex.values()].map((group) => [
          group[0]!.tag,
          JSON.parse(group.map((d) => d.partial_input ?? "").join("")),
        ]),
      ).toEqual([
        ["call_t1", { values: { expression: "1+1" } }],
        ["call_t2", { values: { expression: "2+2" } }],
      ]);

      fake.reply(callTools(twoCalls, undefined, "Let me compute."));
      const plain = await admin.post("/chat/messages", body({ tools: [calculator] }));
      expect(plain.status).toBe(201);
      expectGriptapeMessage(plain.body);
      expect(plain.body.content.map((c: { type: string }) => c.type)).toEqual([
        "TextMessageContent",
        "ActionCallMessageContent",
        "ActionCallMessageContent",
      ]);
      expect(plain.body.content[0].artifact.value).toBe("Let me compute.");
      expect(
        plain.body.content.slice(1).map((c: { artifact: { value: { tag: string } } }) => c.artifact.value.tag),
      ).toEqual(["call_t1", "call_t2"]);
    });

    it("answers an error before the first frame as plain JSON", async () => {
      fake.reply(failWith(400, "nope"));
      const sse = await openSse(url(), auth, body());
      expect(sse.status).toBe(400);
      expect(sse.errorBody).toMatchObject({ type: "ValidationError" });
      const bad = await openSse(url(), auth, body({ driver_configuration: { model: "nobody:knows" } }));
      expect(bad.status).toBe(400);
    });

    it("ends with data: {error} when the provider fails mid-stream", async () => {
      fake.reply(cutAfter("Partial"));
      const sse = await openSse(url(), auth, body());
      expect(sse.status).toBe(200);
      await sse.ended;
      const frames = sse.events.map((e) => JSON.parse(e.data));
      expect(frames[0].content.text).toBe("Partial");
      expect(keysOf(frames.at(-1))).toEqual(["error"]);
      expect(typeof frames.at(-1).error).toBe("string");
    });

    it("a client hanging up mid-stream aborts the provider request", async () => {
      fake.reply(hang("Partial"));
      const arrived = fake.nextRequest();
      const sse = await openSse(url(), auth, body());
      const request = await arrived;
      await sse.waitFor(1);
      sse.close();
      expect(
        await within(
          "the provider request aborted after the client hung up",
          5_000,
          request.closedEarly.then(() => "aborted"),
        ),
      ).toBe("aborted");
    });

    it("deleting the stream's API key ends it at once, saying so, and aborts the provider request", async () => {
      const userId = (await admin.get("/users")).body.users[0].user_id;
      const key = (await admin.post(`/users/${userId}/api-keys`, { name: "chatty" })).body;
      fake.reply(hang("Partial"));
      const arrived = fake.nextRequest();
      const sse = await openSse(url(), { authorization: `Bearer ${key.value}` }, body());
      const request = await arrived;
      await sse.waitFor(1);
      expect((await admin.delete(`/api-keys/${key.api_key_id}`)).status).toBe(204);
      await sse.ended; // before the fix: open until CHAT_TIMEOUT_MS (2 s), ending with a timeout error
      expect(JSON.parse(sse.events.at(-1)!.data)).toEqual({ error: "the API key was deleted" });
      await request.closedEarly;
    });

    it("loom:echo streams too", async () => {
      const sse = await openSse(url(), auth, body({ driver_configuration: { model: "loom:echo" } }));
      await sse.ended;
      const frames = sse.events.map((e) => JSON.parse(e.data));
      expectDeltaFrames(frames);
      expect(
        frames
          .slice(0, -1)
          .map((f) => f.content.text)
          .join(""),
      ).toBe("Echo: Hi there");
      expect(frames.at(-1).content).toBeNull();
    });
  });

  describe("the Anthropic protocol", () => {
    const claude = (over: Record<string, unknown> = {}) =>
      body({ driver_configuration: { ...body().driver_configuration, model: "anthropic:claude-haiku-4-5" }, ...over });

    it("answers text with usage, system as the system prompt, settings passed", async () => {
      anthropic.reply(anthropicAnswer("Bonjour."));
      const res = await admin.post("/chat/messages", claude());
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expectGriptapeMessage(res.body);
      expect(res.body.content[0].artifact.value).toBe("Bonjour.");
      expect(res.body.usage).toEqual({ type: "Message.Usage", input_tokens: 13, output_tokens: 5 });
      const sent = anthropic.requests.at(-1)!;
      expect(sent.path).toBe("/v1/messages");
      expect(sent.headers["x-api-key"]).toBe("test-anthropic-key");
      expect(sent.body).toMatchObject({ model: "claude-haiku-4-5", max_tokens: 50, temperature: 0.2 });
      expect(JSON.stringify(sent.body.system)).toContain("You are terse.");
    });

    it("runs the agent loop: tool_use comes back as ActionCallMessageContent, the result goes back as tool_result", async () => {
      anthropic.reply(
        anthropicToolUse([{ id: "toolu_1", name: "Calculator_calculate", input: { values: { expression: "6*7" } } }]),
      );
      const first = await admin.post("/chat/messages", claude({ tools: [calculator] }));
      expect(first.status, JSON.stringify(first.body)).toBe(201);
      expectGriptapeMessage(first.body);
      expect(anthropic.requests.at(-1)!.body.tools[0]).toMatchObject({
        name: "Calculator_calculate",
        description: "Calculates an expression",
      });
      const action = first.body.content[0].artifact.value;
      expect(action).toEqual({
        type: "ToolAction",
        tag: "toolu_1",
        name: "Calculator",
        path: "calculate",
        input: { values: { expression: "6*7" } },
      });
      anthropic.reply(anthropicAnswer("42."));
      const result = {
        ...userText("ignored"),
        content: [{ type: "ActionResultMessageContent", artifact: textArtifact("42"), action }],
      };
      const second = await admin.post(
        "/chat/messages",
        claude({ tools: [calculator], messages: [...claude().messages, first.body, result] }),
      );
      expect(second.status).toBe(201);
      expect(second.body.content[0].artifact.value).toBe("42.");
      const sent = anthropic.requests.at(-1)!.body.messages;
      expect(sent.at(-2)).toMatchObject({
        role: "assistant",
        content: [
          { type: "tool_use", id: "toolu_1", name: "Calculator_calculate", input: { values: { expression: "6*7" } } },
        ],
      });
      expect(sent.at(-1)).toMatchObject({ role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1" }] });
      expect(JSON.stringify(sent.at(-1).content[0].content)).toContain("42");
    });

    it("streams text and tool-call deltas, then the usage", async () => {
      anthropic.reply(anthropicAnswer("one two three"));
      const text = await openSse(`${stack.gatewayUrl}/chat/messages/stream`, auth, claude());
      await text.ended;
      const frames = text.events.map((e) => JSON.parse(e.data));
      expect(
        frames
          .slice(0, -1)
          .map((f) => f.content.text)
          .join(""),
      ).toBe("one two three");
      expect(frames.at(-1)).toEqual({
        type: "DeltaMessage",
        role: "assistant",
        content: null,
        usage: { type: "Message.Usage", input_tokens: 13, output_tokens: 5 },
      });

      anthropic.reply(
        anthropicToolUse([{ id: "toolu_2", name: "Calculator_calculate", input: { values: { expression: "1+2" } } }]),
      );
      const call = await openSse(`${stack.gatewayUrl}/chat/messages/stream`, auth, claude({ tools: [calculator] }));
      await call.ended;
      const deltas = call.events
        .map((e) => JSON.parse(e.data))
        .slice(0, -1)
        .map((f) => f.content);
      for (const d of deltas) expect(keysOf(d)).toEqual(keys.actionCallDelta);
      expect(deltas[0]).toMatchObject({ tag: "toolu_2", name: "Calculator", path: "calculate" });
      expect(JSON.parse(deltas.map((d) => d.partial_input ?? "").join(""))).toEqual({ values: { expression: "1+2" } });
    });

    it("structured output: native and tool", async () => {
      const schema = {
        type: "object",
        properties: { answer: { type: "string" } },
        required: ["answer"],
        additionalProperties: false,
      };
      anthropic.reply(anthropicAnswer('{"answer":"oui"}'));
      const native = await admin.post("/chat/messages", claude({ output_schema: schema }));
      expect(native.status, JSON.stringify(native.body)).toBe(201);
      expectGriptapeMessage(native.body);
      expect(JSON.parse(native.body.content[0].artifact.value)).toEqual({ answer: "oui" });
      // Anthropic's structured outputs: the schema travels as output_config.format.
      expect(anthropic.requests.at(-1)!.body.output_config).toEqual({ format: { type: "json_schema", schema } });

      anthropic.reply(anthropicAnswer('{"answer":42}'));
      expect((await admin.post("/chat/messages", claude({ output_schema: schema }))).status).toBe(503);

      anthropic.reply(
        anthropicToolUse([{ id: "toolu_so", name: "StructuredOutputTool_provide_output", input: { answer: "oui" } }]),
      );
      const viaTool = await admin.post(
        "/chat/messages",
        claude({
          output_schema: schema,
          driver_configuration: { ...claude().driver_configuration, structured_output_strategy: "tool" },
        }),
      );
      expect(viaTool.status, JSON.stringify(viaTool.body)).toBe(201);
      expectGriptapeMessage(viaTool.body);
      const sent = anthropic.requests.at(-1)!.body;
      expect(sent.tool_choice).toMatchObject({ type: "tool", name: "StructuredOutputTool_provide_output" });
      expect(sent.tools.map((t: { name: string }) => t.name)).toContain("StructuredOutputTool_provide_output");
      expect(viaTool.body.content[0].artifact.value).toEqual({
        type: "ToolAction",
        tag: "toolu_so",
        name: "StructuredOutputTool",
        path: "provide_output",
        input: { answer: "oui" },
      });
    });

    it("answers the provider's rejection with 400", async () => {
      anthropic.reply(anthropicError(400, "prompt is too long"));
      const res = await admin.post("/chat/messages", claude());
      expect(res.status).toBe(400);
      expect(res.body.errors[0].message).toContain("prompt is too long");
    });
  });
});
