import { createServer } from "node:http";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { listen } from "@loom/server/rpc-server";
import { answer, callTools, type FakeOpenAI, failWith, hang, startFakeOpenAI } from "@loom/testing/fake-openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createAiSdkModel } from "../src/models/ai-sdk.ts";
import { type ChatTurn, type Model, ModelFailure, type ToolCallDelta } from "../src/models/port.ts";

const conversation: ChatTurn[] = [
  { role: "system", content: "Be brief." },
  { role: "user", content: "Say hello." },
];

function compatibleModel(baseURL: string, maxRetries?: number): Model {
  const provider = createOpenAICompatible({
    name: "openai-compatible",
    baseURL,
    apiKey: "sk-test",
    includeUsage: true,
    // As resolve.ts configures the provider: JSON schemas go out as `response_format: json_schema`.
    supportsStructuredOutputs: true,
  });
  return createAiSdkModel({
    id: "openai-compatible:tiny",
    model: provider("tiny"),
    ...(maxRetries === undefined ? {} : { maxRetries }),
  });
}

const noSignal = () => new AbortController().signal;

/** The model's rejection, which every case below expects. */
async function failure(run: Promise<unknown>): Promise<unknown> {
  try {
    await run;
  } catch (error) {
    return error;
  }
  throw new Error("expected the call to fail");
}

describe("AI SDK models against an OpenAI-compatible server", () => {
  let server: FakeOpenAI;
  let model: Model;

  beforeAll(async () => {
    server = await startFakeOpenAI();
    model = compatibleModel(server.baseUrl);
  });
  afterAll(() => server?.close());
  beforeEach(() => {
    server.requests.length = 0;
    server.reply(answer("Hello there, world!", { prompt_tokens: 11, completion_tokens: 7 }));
  });

  it("answers without streaming, with the provider's token counts", async () => {
    const result = await model.generate({ messages: conversation, signal: noSignal() });
    expect(result).toEqual({ text: "Hello there, world!", inputTokens: 11, outputTokens: 7 });
    expect(server.requests).toHaveLength(1);
    const [request] = server.requests;
    expect(request!.path).toBe("/v1/chat/completions");
    expect(request!.headers.authorization).toBe("Bearer sk-test");
    expect(request!.body).toMatchObject({
      model: "tiny",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Say hello." },
      ],
    });
    expect(request!.body.stream).toBeFalsy();
  });

  it("streams: every delta in order, then the usage of the final chunk", async () => {
    const chunks: string[] = [];
    const result = await model.generate({
      messages: conversation,
      signal: noSignal(),
      onChunk: (token) => void chunks.push(token),
    });
    expect(chunks).toEqual(["Hello", " there,", " world!"]);
    expect(result).toEqual({ text: "Hello there, world!", inputTokens: 11, outputTokens: 7 });
    const [request] = server.requests;
    expect(request!.body).toMatchObject({ stream: true, stream_options: { include_usage: true }, model: "tiny" });
    expect(request!.body.messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: "Say hello." },
    ]);
  });

  it("keeps a conversation's turns in order", async () => {
    const turns: ChatTurn[] = [
      { role: "system", content: "Be brief." },
      { role: "user", content: "one" },
      { role: "assistant", content: "two" },
      { role: "user", content: "three" },
    ];
    await model.generate({ messages: turns, signal: noSignal() });
    expect(server.requests[0]!.body.messages).toEqual(turns);
  });

  describe("with tools (a run's agent loop)", () => {
    const tools = [
      {
        name: "Calc_add",
        description: "Adds.",
        inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } } },
      },
    ];
    const calls = [
      { id: "call_1", name: "Calc_add", arguments: { a: 1, b: 2 } },
      { id: "call_2", name: "Calc_add", arguments: { a: 3, b: 4 } },
    ];

    it("offers them, and gives back the model's calls, streamed or not; a streamed call comes in pieces", async () => {
      server.reply(callTools(calls));
      const plain = await model.generate({ messages: conversation, signal: noSignal(), tools });
      expect(server.requests[0]!.body.tools.map((t: any) => t.function.name)).toEqual(["Calc_add"]);
      const expected = [
        { id: "call_1", name: "Calc_add", input: { a: 1, b: 2 } },
        { id: "call_2", name: "Calc_add", input: { a: 3, b: 4 } },
      ];
      expect(plain.toolCalls).toEqual(expected);
      const deltas: ToolCallDelta[] = [];
      const streamed = await model.generate({
        messages: conversation,
        signal: noSignal(),
        tools,
        onChunk: () => {},
        onToolCallDelta: (delta) => void deltas.push(delta),
      });
      expect(streamed.toolCalls).toEqual(expected);
      expect(deltas.filter((d) => d.name !== undefined)).toEqual([
        { id: "call_1", index: 0, name: "Calc_add" },
        { id: "call_2", index: 1, name: "Calc_add" },
      ]);
      const input = (id: string) =>
        deltas
          .filter((d) => d.id === id)
          .map((d) => d.partialInput ?? "")
          .join("");
      expect(JSON.parse(input("call_2"))).toEqual({ a: 3, b: 4 });
    });

    it("a call whose input is not JSON comes back with why, to be answered without calling the tool", async () => {
      server.reply((request, res) => {
        res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({
            id: "chatcmpl-3",
            created: 1_700_000_000,
            model: request.body.model,
            object: "chat.completion",
            choices: [
              {
                index: 0,
                message: {
                  role: "assistant",
                  content: null,
                  tool_calls: [
                    { id: "call_9", type: "function", function: { name: "Calc_add", arguments: "{not json" } },
                  ],
                },
                finish_reason: "tool_calls",
              },
            ],
            usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
          }),
        );
      });
      const result = await model.generate({ messages: conversation, signal: noSignal(), tools });
      expect(result.toolCalls).toEqual([
        { id: "call_9", name: "Calc_add", input: {}, inputError: expect.stringContaining("Calc_add") },
      ]);
    });

    it("sends earlier calls and their results as the provider's tool-call and tool messages", async () => {
      await model.generate({
        messages: [
          ...conversation,
          { role: "assistant", content: "", toolCalls: [{ id: "call_1", name: "Calc_add", input: { a: 1, b: 2 } }] },
          { role: "tool", results: [{ callId: "call_1", name: "Calc_add", text: "3", isError: false }] },
        ],
        signal: noSignal(),
        tools,
      });
      const sent = server.requests[0]!.body.messages.slice(2);
      expect(sent).toMatchObject([
        {
          role: "assistant",
          tool_calls: [{ id: "call_1", type: "function", function: { name: "Calc_add", arguments: '{"a":1,"b":2}' } }],
        },
        { role: "tool", tool_call_id: "call_1", content: "3" },
      ]);
    });
  });

  describe("with an output schema (a run's JSON-schema rule)", () => {
    const outputSchema = {
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
      additionalProperties: false,
    };

    it("asks the provider for JSON following it, streamed or not; the answer's text is the JSON", async () => {
      const json = JSON.stringify({ city: "Paris" });
      server.reply(answer(json));
      const whole = await model.generate({ messages: conversation, signal: noSignal(), outputSchema });
      const chunks: string[] = [];
      const streamed = await model.generate({
        messages: conversation,
        signal: noSignal(),
        outputSchema,
        onChunk: (token) => void chunks.push(token),
      });
      expect([whole.text, streamed.text, chunks.join("")]).toEqual([json, json, json]);
      for (const request of server.requests)
        expect(request.body.response_format).toMatchObject({
          type: "json_schema",
          json_schema: { schema: outputSchema },
        });
    });

    it("an answer that does not follow the schema is the provider's unusable answer (ERROR), streamed or not", async () => {
      server.reply(answer('{"town": "Paris"}'));
      for (const onChunk of [undefined, () => {}]) {
        const error = await failure(
          model.generate({ messages: conversation, signal: noSignal(), outputSchema, onChunk }),
        );
        expect(error).toBeInstanceOf(ModelFailure);
        expect(error).toMatchObject({ kind: "error", reason: "ProviderInvalidResponse" });
      }
    });

    it("sends no response_format without one", async () => {
      await model.generate({ messages: conversation, signal: noSignal() });
      expect(server.requests[0]!.body).not.toHaveProperty("response_format");
    });
  });

  it("awaits onChunk before the next delta", async () => {
    const seen: string[] = [];
    await model.generate({
      messages: conversation,
      signal: noSignal(),
      onChunk: async (token) => {
        seen.push(`start ${token}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
        seen.push(`end ${token}`);
      },
    });
    expect(seen).toEqual(["start Hello", "end Hello", "start  there,", "end  there,", "start  world!", "end  world!"]);
  });

  it("passes an onChunk error through untouched and closes the provider's stream", async () => {
    server.reply(hang("First"));
    const oops = new Error("event store down");
    const run = model.generate({
      messages: conversation,
      signal: noSignal(),
      onChunk: () => {
        throw oops;
      },
    });
    expect(await failure(run)).toBe(oops);
    await server.requests[0]!.closedEarly;
  });

  describe.each([
    ["without streaming", false],
    ["streaming", true],
  ])("errors %s", (_label, streaming) => {
    const generate = (target: Model, signal = noSignal()) =>
      target.generate({ messages: conversation, signal, ...(streaming ? { onChunk: () => {} } : {}) });

    it("a 400 is FAILED (ProviderRejected), asked once", async () => {
      server.reply(failWith(400, "messages: invalid"));
      const error = await failure(generate(model));
      expect(error).toBeInstanceOf(ModelFailure);
      expect(error).toMatchObject({ kind: "failed", reason: "ProviderRejected" });
      expect((error as Error).message).toContain("messages: invalid");
      expect(server.requests).toHaveLength(1);
    });

    it("a 500 on every retry is ERROR (ProviderUnavailable), after 1 + 2 attempts", async () => {
      server.reply(failWith(500, "upstream broke"));
      const error = await failure(generate(model));
      expect(error).toBeInstanceOf(ModelFailure);
      expect(error).toMatchObject({ kind: "error", reason: "ProviderUnavailable" });
      expect(server.requests).toHaveLength(3);
    });

    it("a 429 is ERROR, not FAILED: it passes with time", async () => {
      server.reply(failWith(429, "slow down"));
      expect(await failure(generate(model))).toMatchObject({ kind: "error", reason: "ProviderUnavailable" });
    });

    it("an answer stopped by the content filter is FAILED (ProviderRefused)", async () => {
      server.reply(answer("I cannot", undefined, "content_filter"));
      const error = await failure(generate(model));
      expect(error).toBeInstanceOf(ModelFailure);
      expect(error).toMatchObject({ kind: "failed", reason: "ProviderRefused" });
    });

    it("a 500 that heals on retry answers normally", async () => {
      let calls = 0;
      const ok = answer("Fine now.");
      server.reply((request, res) => (++calls === 1 ? failWith(503)(request, res) : ok(request, res)));
      expect((await generate(model)).text).toBe("Fine now.");
      expect(server.requests).toHaveLength(2);
    });

    it("aborting while the server holds the response rejects as an abort and closes the request", async () => {
      server.reply(hang());
      const controller = new AbortController();
      const arrived = server.nextRequest();
      const run = generate(model, controller.signal);
      const request = await arrived;
      controller.abort();
      const error = await failure(run);
      expect(error).not.toBeInstanceOf(ModelFailure);
      expect(error).toMatchObject({ name: "AbortError" });
      await request.closedEarly;
    });

    it("rejects with the signal's own reason", async () => {
      server.reply(hang());
      const controller = new AbortController();
      const arrived = server.nextRequest();
      const run = generate(model, controller.signal);
      await arrived;
      const reason = new Error("run cancelled");
      controller.abort(reason);
      expect(await failure(run)).toBe(reason);
    });
  });

  it("a streamed answer aborted mid-way keeps the chunks already delivered", async () => {
    server.reply(hang("Partial"));
    const controller = new AbortController();
    const chunks: string[] = [];
    const run = model.generate({
      messages: conversation,
      signal: controller.signal,
      onChunk: (token) => {
        chunks.push(token);
        controller.abort();
      },
    });
    expect(await failure(run)).toMatchObject({ name: "AbortError" });
    expect(chunks).toEqual(["Partial"]);
    await server.requests[0]!.closedEarly;
  });
});

describe("AI SDK models when the server is unreachable", () => {
  let closedPort: string;

  beforeAll(async () => {
    // A port that was just ours and is now closed: connections are refused.
    const running = await listen(createServer(), 0, "127.0.0.1");
    closedPort = `${running.url}/v1`;
    await running.close();
  });

  it.each([
    ["without streaming", false],
    ["streaming", true],
  ])("connection refused is ERROR (ProviderUnavailable) after retrying, %s", async (_label, streaming) => {
    // One retry: the SDK waits 2 s before it when the server sent no Retry-After.
    const model = compatibleModel(closedPort, 1);
    const error = await failure(
      model.generate({ messages: conversation, signal: noSignal(), ...(streaming ? { onChunk: () => {} } : {}) }),
    );
    expect(error).toBeInstanceOf(ModelFailure);
    expect(error).toMatchObject({ kind: "error", reason: "ProviderUnavailable" });
    expect((error as Error).message).toMatch(/could not be reached/);
  });
});
