import { randomBytes } from "node:crypto";
import { lifecycleEventType, terminalLifecycleEvents } from "@loom/contracts/run-lifecycle";
import { pieces, startFakeOpenAI, trickle } from "@loom/testing/fake-openai";
import { apiClient } from "@loom/testing/http";
import { freePort, startProcess, stopProcess } from "@loom/testing/processes";
import { createParser } from "eventsource-parser";
import { percentile, printTable } from "./load.ts";

const tokenCount = 200;
const firstTokenMs = 50;
const tokenGapMs = 2;
const warmUp = 3;
const text = Array.from({ length: tokenCount }, (_, i) => `t${i}`).join(" ");

/** One streamed answer as the client saw it; times in ms from the request's start. */
interface Sample {
  ttft: number;
  total: number;
  text: string;
}

/**
 * Reads one SSE response with eventsource-parser (as the tests do); `token`
 * says which text a frame's data carries (undefined: none). `started` is
 * when the measured operation began (for runs, before the POST that created the run).
 */
async function readStream(
  url: string,
  init: RequestInit,
  token: (data: string) => string | undefined,
  started = performance.now(),
): Promise<Sample> {
  const res = await fetch(url, init);
  if (res.status !== 200 || !res.headers.get("content-type")?.startsWith("text/event-stream"))
    throw new Error(`${url} answered ${res.status}: ${await res.text()}`);
  let ttft = 0;
  let received = "";
  const parser = createParser({
    onEvent: (event) => {
      const piece = token(event.data);
      if (piece === undefined || piece === "") return;
      if (!received) ttft = performance.now() - started;
      received += piece;
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
    parser.feed(decoder.decode(chunk, { stream: true }));
  return { ttft, total: performance.now() - started, text: received };
}

const parse = (data: string) => (data === "[DONE]" ? undefined : JSON.parse(data));

/**
 * Issue 14: the overhead of Loom's streaming paths over the model's own. A
 * fake OpenAI-compatible provider (in this process) streams 200 tokens, the
 * first after 50 ms, then one every 2 ms; the all-in-one process uses it as
 * DEFAULT_MODEL. Each round makes one request of each kind, one after the
 * other (a slow moment of the machine weighs on all three): the provider
 * called directly (the baseline), Loom's chat stream, and a `stream: true`
 * run read on its SSE stream from before its POST. Goals: time to first
 * token p50 ≤ provider + 10 ms (chat), + 30 ms (runs); no token lost.
 */
export async function benchStreaming(options: { requests: number }): Promise<void> {
  const fake = await startFakeOpenAI();
  fake.reply(trickle(text, tokenGapMs, firstTokenMs));
  const key = `loom_bench-${randomBytes(24).toString("base64url")}`;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const loom = await startProcess(
    "apps/loom/src/main.ts",
    {
      PORT: String(port),
      BOOTSTRAP_API_KEY: key,
      DEFAULT_MODEL: "openai-compatible:fake-model",
      OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
    },
    `${url}/healthz`,
  );
  const api = apiClient(url, key);
  const auth = { authorization: `Bearer ${key}` };
  const assistantId = (await api.post("/assistants", { name: "streaming-bench" })).body.assistant_id as string;

  const provider = () =>
    readStream(
      `${fake.baseUrl}/chat/completions`,
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "fake-model", stream: true, messages: [{ role: "user", content: "benchmark" }] }),
      },
      (data) => parse(data)?.choices?.[0]?.delta?.content,
    );
  const chatBody = {
    messages: [
      {
        type: "Message",
        role: "user",
        content: [
          {
            type: "TextMessageContent",
            artifact: { type: "TextArtifact", id: "a1", reference: null, meta: {}, name: "a1", value: "benchmark" },
          },
        ],
        usage: { type: "Message.Usage", input_tokens: null, output_tokens: null },
      },
    ],
    tools: [],
    output_schema: null,
    driver_configuration: {
      max_tokens: 1000,
      temperature: 0,
      use_native_tools: false,
      structured_output_strategy: "native",
      extra_params: {},
    },
  };
  const chat = () =>
    readStream(
      `${url}/chat/messages/stream`,
      {
        method: "POST",
        headers: { ...auth, accept: "text/event-stream", "content-type": "application/json" },
        body: JSON.stringify(chatBody),
      },
      (data) => {
        const frame = parse(data);
        if (frame?.error) throw new Error(`the chat stream failed: ${frame.error}`);
        return frame?.content?.type === "TextDeltaMessageContent" ? frame.content.text : undefined;
      },
    );
  const run = async () => {
    const started = performance.now();
    const created = await api.post(`/assistants/${assistantId}/runs`, { input: "benchmark", stream: true });
    if (created.status !== 201)
      throw new Error(`CreateAssistantRun answered ${created.status}: ${JSON.stringify(created.body)}`);
    return readStream(
      `${url}/assistant-runs/${created.body.assistant_run_id}/events/stream`,
      { headers: { ...auth, accept: "text/event-stream" } },
      (data) => {
        const event = parse(data);
        if (terminalLifecycleEvents.has(event?.type) && event.type !== lifecycleEventType.SUCCEEDED)
          throw new Error(`the run failed: ${data}`);
        return event?.type === "TextChunkEvent" ? event.payload.token : undefined;
      },
      started,
    );
  };

  const kinds = [
    { name: "provider, called directly (baseline)", measure: provider, goalMs: undefined },
    { name: "chat: POST /chat/messages/stream", measure: chat, goalMs: 10 },
    { name: "runs: POST …/runs (stream) → events/stream", measure: run, goalMs: 30 },
  ];
  const samples = kinds.map(() => [] as Sample[]);
  try {
    for (let round = 0; round < warmUp + options.requests; round++) {
      for (const [i, kind] of kinds.entries()) {
        const sample = await kind.measure();
        if (round >= warmUp) samples[i]!.push(sample);
      }
    }
  } finally {
    await stopProcess(loom);
    await fake.close();
  }

  const sorted = (values: number[]) => values.sort((a, b) => a - b);
  const baselineTtft = percentile(sorted(samples[0]!.map((s) => s.ttft)), 50);
  const rows = kinds.map((kind, i) => {
    const ttft = sorted(samples[i]!.map((s) => s.ttft));
    const total = sorted(samples[i]!.map((s) => s.total));
    // A token is lost when a request's text is not exactly the provider's: every piece, in order.
    const lost = samples[i]!.reduce(
      (sum, s) => sum + (s.text === text ? 0 : Math.max(1, tokenCount - pieces(s.text).length)),
      0,
    );
    const overhead = percentile(ttft, 50) - baselineTtft;
    const met = kind.goalMs === undefined ? "(baseline)" : overhead <= kind.goalMs && lost === 0 ? "met" : "MISSED";
    return {
      path: kind.name,
      "TTFT p50 ms": percentile(ttft, 50).toFixed(1),
      "TTFT p99 ms": percentile(ttft, 99).toFixed(1),
      "total p50 ms": percentile(total, 50).toFixed(1),
      "total p99 ms": percentile(total, 99).toFixed(1),
      "tokens/request": `${Math.min(...samples[i]!.map((s) => pieces(s.text).length))}–${Math.max(...samples[i]!.map((s) => pieces(s.text).length))}`,
      "tokens lost": lost,
      "TTFT p50 overhead ms": kind.goalMs === undefined ? "" : `${overhead.toFixed(1)} (goal ≤ ${kind.goalMs})`,
      goal: met,
    };
  });
  printTable(
    `Streaming overhead (all-in-one process, SQLite file): ${tokenCount} tokens, first after ${firstTokenMs} ms, then every ${tokenGapMs} ms; ${options.requests} sequential requests of each kind after ${warmUp} warm-up rounds`,
    rows,
  );
}
