import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { type SplitStack, splitServices, startSplitStack } from "@loom/test-stacks/split-stack";
import { answer, type FakeOpenAI, startFakeOpenAI } from "@loom/testing/fake-openai";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { type Jaeger, type JaegerSpan, needsJaeger, startJaeger } from "@loom/testing/jaeger";
import { freePort, startProcess, stopProcess } from "@loom/testing/processes";
import { dropDatabase, freshDatabaseName, needs, testServers } from "@loom/testing/servers";
import { openSse } from "@loom/testing/sse";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

const runsOn =
  needsJaeger("traces of the split deployment") &&
  needs("MONGODB_URL", "traces of the split deployment") &&
  needs("NATS_URL", "traces of the split deployment");

/**
 * The split deployment (every service its own process, on the shared MongoDB
 * and NATS test servers) exporting to a real Jaeger: one streamed run's
 * trace, read back from Jaeger, follows it from the gateway to the SSE
 * delivery of its events.
 */
describe.skipIf(!runsOn)("traces of a streamed run in the split deployment", () => {
  let jaeger: Jaeger;
  let model: FakeOpenAI;
  let split: SplitStack;
  let api: ApiClient;
  const key = `loom_traces-${randomBytes(24).toString("base64url")}`;
  const databases = Object.fromEntries(
    splitServices.map((name) => [name, { MONGODB_DB: freshDatabaseName(`loom_traces_${name}`) }]),
  );
  /** Held until the run's SSE stream is open, so its events reach the stream live (over NATS), not from a replay. */
  let openStream: () => void;
  const streamOpen = new Promise<void>((resolve) => (openStream = resolve));

  beforeAll(async () => {
    jaeger = await startJaeger();
    model = await startFakeOpenAI();
    model.reply((request, res) => void streamOpen.then(() => answer("Traced words arrive one by one")(request, res)));
    split = await startSplitStack(
      {
        MONGODB_URL: testServers.mongoUrl!,
        NATS_URL: testServers.natsUrl!,
        OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint,
        // Spans leave every 100 ms, not every 5 s: the test reads them back.
        OTEL_BSP_SCHEDULE_DELAY: "100",
        LOG_LEVEL: "warn",
      },
      {
        ...databases,
        identity: { ...databases.identity, BOOTSTRAP_API_KEY: key },
        runs: {
          ...databases.runs,
          DEFAULT_MODEL: "openai-compatible:fake-model",
          OPENAI_COMPATIBLE_BASE_URL: model.baseUrl,
          RUN_POLL_MS: "100",
        },
      },
    );
    api = apiClient(split.gatewayUrl, key);
  }, 60_000);

  afterAll(async () => {
    await split?.stop();
    await model?.close();
    await jaeger?.close();
    if (runsOn)
      for (const { MONGODB_DB } of Object.values(databases)) await dropDatabase(testServers.mongoUrl!, MONGODB_DB);
  });

  it("covers gateway → runs → worker → model → events → NATS → SSE delivery, parent links intact", async () => {
    const assistant = await api.post("/assistants", { name: "traced", input: "{{ args[0] }}" });
    expect(assistant.status).toBe(201);
    const created = await api.post(`/assistants/${assistant.body.assistant_id}/runs`, {
      args: ["hello"],
      stream: true,
    });
    expect(created.status).toBe(201);
    const traceId = created.headers.get("x-trace-id");
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);

    const sse = await openSse(`${split.gatewayUrl}/assistant-runs/${created.body.assistant_run_id}/events/stream`, {
      authorization: `Bearer ${key}`,
    });
    expect(sse.status).toBe(200);
    // The stream answers with the trace of its own request.
    expect(sse.headers.get("x-trace-id")).toMatch(/^[0-9a-f]{32}$/);
    openStream();
    await sse.ended;
    const types = sse.events.map((e) => JSON.parse(e.data).type);
    expect(types).toContain("TextChunkEvent");
    expect(types.at(-1)).toBe("AssistantRunSucceeded");
    // A run created inside a trace names it in its griptape events' meta.
    const chunk = sse.events.map((e) => JSON.parse(e.data)).find((e) => e.type === "TextChunkEvent");
    expect(chunk.payload.meta).toEqual({ trace_id: traceId });

    // Every span of the path, each exported by its own process: wait until Jaeger has them all.
    const spans = await completeTrace(jaeger, traceId!, splitPath);
    const byId = new Map(spans.map((s) => [s.spanID, s]));
    expect(spans.filter((s) => !s.parentSpanID).map(describeSpan)).toEqual(["loom-gateway CreateAssistantRun"]);

    // The SSE delivery of a live event, walked up to the root: the whole path, in order.
    const path = pathOfLiveDelivery(spans);
    expect(path[0]).toBe("loom-gateway CreateAssistantRun");
    expect(path).toEqual(
      expect.arrayContaining([
        "loom-gateway loom.runs.v1.RunsService/CreateAssistantRun",
        "loom-runs loom.runs.v1.RunsService/CreateAssistantRun",
        "loom-runs ExecuteRun",
        "loom-runs model openai-compatible:fake-model",
        "loom-runs loom.events.v1.EventsService/AppendEvents",
        "loom-events loom.events.v1.EventsService/AppendEvents",
        "loom-events receive",
        "loom-gateway SSE deliver",
      ]),
    );
    const order = ["CreateAssistantRun", "ExecuteRun", "model", "AppendEvents", "receive", "SSE deliver"];
    const positions = order.map((name) => path.findIndex((p) => p.includes(name)));
    expect(positions).toEqual([...positions].sort((a, b) => a - b));

    // The AI SDK's spans sit under the model call; MongoDB's under the services' calls.
    const modelCall = spans.find((s) => s.operationName === "model openai-compatible:fake-model")!;
    expect(spans.some((s) => s.service === "loom-runs" && isAiSdkSpan(s) && isBelow(s, modelCall, byId))).toBe(true);
    expect(spans.some((s) => s.service === "loom-runs" && s.tags["db.system.name"] === "mongodb")).toBe(true);
    expect(spans.some((s) => s.service === "loom-events" && s.tags["db.system.name"] === "mongodb")).toBe(true);
  }, 60_000);
});

/**
 * The all-in-one process: services call each other over the in-process
 * transport (no headers: the caller's async context carries the trace) and
 * the in-process bus. The same run makes one trace too.
 */
describe.skipIf(!needsJaeger("traces of the all-in-one process"))(
  "traces of a streamed run in the all-in-one process",
  () => {
    let jaeger: Jaeger;
    let model: FakeOpenAI;
    let loom: ChildProcess;
    let url: string;
    const key = `loom_traces-${randomBytes(24).toString("base64url")}`;
    let openStream: () => void;
    const streamOpen = new Promise<void>((resolve) => (openStream = resolve));

    beforeAll(async () => {
      jaeger = await startJaeger();
      model = await startFakeOpenAI();
      model.reply((request, res) => void streamOpen.then(() => answer("Traced words arrive one by one")(request, res)));
      const port = await freePort();
      url = `http://127.0.0.1:${port}`;
      loom = await startProcess(
        "apps/loom/src/main.ts",
        {
          PORT: String(port),
          BOOTSTRAP_API_KEY: key,
          DEFAULT_MODEL: "openai-compatible:fake-model",
          OPENAI_COMPATIBLE_BASE_URL: model.baseUrl,
          OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint,
          OTEL_BSP_SCHEDULE_DELAY: "100",
        },
        `${url}/healthz`,
      );
    }, 60_000);

    afterAll(async () => {
      if (loom) await stopProcess(loom);
      await model?.close();
      await jaeger?.close();
    });

    it("follows the run from the request through the in-process calls to the SSE delivery", async () => {
      const api = apiClient(url, key);
      const assistant = await api.post("/assistants", { name: "traced", input: "{{ args[0] }}" });
      const created = await api.post(`/assistants/${assistant.body.assistant_id}/runs`, {
        args: ["hello"],
        stream: true,
      });
      const traceId = created.headers.get("x-trace-id")!;
      expect(traceId).toMatch(/^[0-9a-f]{32}$/);
      const sse = await openSse(`${url}/assistant-runs/${created.body.assistant_run_id}/events/stream`, {
        authorization: `Bearer ${key}`,
      });
      openStream();
      await sse.ended;
      expect(sse.events.map((e) => JSON.parse(e.data).type).at(-1)).toBe("AssistantRunSucceeded");

      const spans = await completeTrace(jaeger, traceId, [
        { what: "the gateway's request", matches: (s) => s.operationName === "CreateAssistantRun" },
        {
          what: "the in-process CreateAssistantRun",
          matches: (s) => s.operationName === "loom.runs.v1.RunsService/CreateAssistantRun",
        },
        { what: "the worker's execution", matches: (s) => s.operationName === "ExecuteRun" },
        { what: "an SSE delivery", matches: (s) => s.operationName === "SSE deliver" },
      ]);
      expect(new Set(spans.map((s) => s.service))).toEqual(new Set(["loom"]));
      expect(spans.filter((s) => !s.parentSpanID).map((s) => s.operationName)).toEqual(["CreateAssistantRun"]);
      const path = pathOfLiveDelivery(spans).map((p) => p.replace(/^loom /, ""));
      expect(path).toEqual([
        "CreateAssistantRun",
        "loom.runs.v1.RunsService/CreateAssistantRun",
        "ExecuteRun",
        "model openai-compatible:fake-model",
        "loom.events.v1.EventsService/AppendEvents",
        "SSE deliver",
      ]);
    }, 60_000);
  },
);

/**
 * A request whose trace is not sampled records nothing, but its trace goes
 * on: its calls carry it in their headers instead of an async context, and
 * its run's events still name it.
 */
describe.skipIf(!needsJaeger("an unsampled trace in the all-in-one process"))(
  "a request whose trace is not sampled",
  () => {
    let jaeger: Jaeger;
    let loom: ChildProcess;
    let url: string;
    const key = `loom_traces-${randomBytes(24).toString("base64url")}`;

    beforeAll(async () => {
      jaeger = await startJaeger();
      const port = await freePort();
      url = `http://127.0.0.1:${port}`;
      loom = await startProcess(
        "apps/loom/src/main.ts",
        {
          PORT: String(port),
          BOOTSTRAP_API_KEY: key,
          OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint,
          OTEL_BSP_SCHEDULE_DELAY: "100",
          OTEL_TRACES_SAMPLER: "always_off",
        },
        `${url}/healthz`,
      );
    }, 60_000);

    afterAll(async () => {
      if (loom) await stopProcess(loom);
      await jaeger?.close();
    });

    it("answers with its trace id, and its run's events name that trace; nothing is exported", async () => {
      const api = apiClient(url, key);
      const assistant = await api.post("/assistants", { name: "untraced", input: "Say {{ args[0] }}" });
      const created = await api.post(`/assistants/${assistant.body.assistant_id}/runs`, { args: ["hello"] });
      const traceId = created.headers.get("x-trace-id");
      expect(traceId).toMatch(/^[0-9a-f]{32}$/);
      let events: Array<{ type: string; payload: { meta?: unknown } }> = [];
      await vi.waitFor(
        async () => {
          events = (await api.get(`/assistant-runs/${created.body.assistant_run_id}/events`)).body.events;
          expect(events.at(-1)?.type).toBe("AssistantRunSucceeded");
        },
        { timeout: 10_000, interval: 20 },
      );
      const griptapeEvents = events.filter((e) => e.type.endsWith("Event"));
      expect(griptapeEvents.length).toBeGreaterThan(0);
      for (const event of griptapeEvents) expect(event.payload.meta).toEqual({ trace_id: traceId });
      // Past the exporter's 100 ms batching: still nothing in Jaeger.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await jaeger.trace(traceId!)).toEqual([]);
    }, 60_000);
  },
);

/** Waits until Jaeger holds a span for every step and no span's parent is missing (each process exports on its own). */
async function completeTrace(
  jaeger: Jaeger,
  traceId: string,
  steps: Array<{ what: string; matches: (s: JaegerSpan) => boolean }>,
): Promise<JaegerSpan[]> {
  return vi.waitFor(
    async () => {
      const found = await jaeger.trace(traceId);
      const missing = steps.filter((step) => !found.some((s) => step.matches(s)));
      if (missing.length)
        throw new Error(
          `the trace lacks ${missing.map((m) => m.what).join(", ")}; it has ${[...new Set(found.map(describeSpan))].join(", ")}`,
        );
      // Intact: every span's parent is in the trace.
      const ids = new Set(found.map((s) => s.spanID));
      const orphans = found.filter((s) => s.parentSpanID && !ids.has(s.parentSpanID));
      if (orphans.length)
        throw new Error(`spans whose parent is not (yet) in the trace: ${orphans.map(describeSpan).join(", ")}`);
      return found;
    },
    { timeout: 20_000, interval: 200 },
  );
}

/** The spans from the root down to the SSE delivery of a live TextChunkEvent, as "service operation". */
function pathOfLiveDelivery(spans: JaegerSpan[]): string[] {
  const byId = new Map(spans.map((s) => [s.spanID, s]));
  const delivery = spans.find(
    (s) => s.operationName === "SSE deliver" && s.tags["loom.event.type"] === "TextChunkEvent",
  );
  expect(delivery, "an SSE delivery of a TextChunkEvent").toBeDefined();
  const chain: JaegerSpan[] = [];
  for (
    let span: JaegerSpan | undefined = delivery;
    span;
    span = span.parentSpanID ? byId.get(span.parentSpanID) : undefined
  )
    chain.unshift(span);
  return chain.map(describeSpan);
}

/** The steps a streamed run's trace must have in the split deployment, each in its process. */
const splitPath: Array<{ what: string; matches: (s: JaegerSpan) => boolean }> = [
  {
    what: "the gateway's request",
    matches: (s) => s.service === "loom-gateway" && s.operationName === "CreateAssistantRun",
  },
  {
    what: "the runs service's CreateAssistantRun",
    matches: (s) => s.service === "loom-runs" && s.operationName.endsWith("/CreateAssistantRun"),
  },
  { what: "the worker's execution", matches: (s) => s.service === "loom-runs" && s.operationName === "ExecuteRun" },
  { what: "the model call", matches: (s) => s.service === "loom-runs" && s.operationName.startsWith("model ") },
  { what: "the AI SDK's spans", matches: (s) => s.service === "loom-runs" && isAiSdkSpan(s) },
  {
    what: "an append in the events service",
    matches: (s) => s.service === "loom-events" && s.operationName.endsWith("/AppendEvents"),
  },
  {
    what: "a NATS delivery (its parent the append that published it)",
    matches: (s) => s.service === "loom-events" && s.operationName === "receive",
  },
  { what: "an SSE delivery", matches: (s) => s.service === "loom-gateway" && s.operationName === "SSE deliver" },
  { what: "MongoDB", matches: (s) => s.tags["db.system.name"] === "mongodb" },
];

/** A span of the AI SDK's OpenTelemetry integration (gen_ai names: `invoke_agent fake-model`, `step 1`, `chat fake-model`). */
function isAiSdkSpan(span: JaegerSpan): boolean {
  return /^(invoke_agent|step|chat) /.test(span.operationName);
}

function describeSpan(span: JaegerSpan): string {
  return `${span.service} ${span.operationName}`;
}

function isBelow(span: JaegerSpan, ancestor: JaegerSpan, byId: Map<string, JaegerSpan>): boolean {
  for (
    let s = span.parentSpanID ? byId.get(span.parentSpanID) : undefined;
    s;
    s = s.parentSpanID ? byId.get(s.parentSpanID) : undefined
  )
    if (s.spanID === ancestor.spanID) return true;
  return false;
}
