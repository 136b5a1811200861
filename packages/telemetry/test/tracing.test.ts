import { AsyncLocalStorage } from "node:async_hooks";
import {
  type Context,
  type ContextManager,
  context,
  createTraceState,
  propagation,
  ROOT_CONTEXT,
  TraceFlags,
  trace,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { afterAll, describe, expect, it } from "vitest";
import { traceIncomingCalls, traceOutgoingCalls } from "../src/rpc-tracing.ts";
import {
  callTraceparent,
  contextOfHeaders,
  isUnsampledTraceparent,
  startSpan,
  startTracing,
  traceHeadersOf,
  unsampledTraceHeaders,
  withSpan,
} from "../src/tracing.ts";

const exporter = new InMemorySpanExporter();
const processor = new SimpleSpanProcessor({ exporter });
trace.setGlobalTracerProvider(new TracerProvider({ spanProcessors: [processor] }));
// What the SDK registers in a process (AsyncLocalStorage), in its few lines: without it, context.with does nothing.
const storage = new AsyncLocalStorage<Context>();
const contextManager: ContextManager = {
  active: () => storage.getStore() ?? ROOT_CONTEXT,
  with: (ctx, fn, thisArg, ...args) => storage.run(ctx, () => fn.call(thisArg, ...args)),
  bind: (_ctx, target) => target,
  enable() {
    return this;
  },
  disable() {
    return this;
  },
};
context.setGlobalContextManager(contextManager);
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
afterAll(() => {
  trace.disable();
  context.disable();
  propagation.disable();
});

const rpc = () =>
  ({
    header: new Headers(),
    method: { name: "GetApiKey", parent: { typeName: "loom.identity.v1.IdentityService" } },
  }) as unknown as { header: Headers };

const parent = (traceFlags: TraceFlags) =>
  trace.setSpanContext(ROOT_CONTEXT, {
    traceId: "0af7651916cd43dd8448eb211c80319c",
    spanId: "b7ad6b7169203331",
    traceFlags,
    isRemote: true,
  });

describe("Loom's spans", () => {
  it("are recorded, with their attributes, under a sampled trace", async () => {
    exporter.reset();
    startSpan(
      "loom.identity.v1.IdentityService/GetApiKey",
      { attributes: { "rpc.method": "GetApiKey" } },
      parent(TraceFlags.SAMPLED),
    ).end();
    await processor.forceFlush();
    const [span] = exporter.getFinishedSpans();
    expect(span?.name).toBe("loom.identity.v1.IdentityService/GetApiKey");
    expect(span?.parentSpanContext?.spanId).toBe("b7ad6b7169203331");
    expect(span?.attributes).toEqual({ "rpc.method": "GetApiKey" });
  });

  it("are not made under a trace that is not sampled: the trace's context goes on as it came", async () => {
    exporter.reset();
    const span = startSpan(
      "loom.identity.v1.IdentityService/GetApiKey",
      { attributes: { "rpc.method": "GetApiKey" } },
      parent(TraceFlags.NONE),
    );
    span.end();
    await processor.forceFlush();
    expect(span.isRecording()).toBe(false);
    expect(span.spanContext()).toMatchObject({
      traceId: "0af7651916cd43dd8448eb211c80319c",
      spanId: "b7ad6b7169203331",
      traceFlags: TraceFlags.NONE,
    });
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it("a Connect call under an unsampled trace makes no span and runs in that trace; under a sampled one, one span, its child", async () => {
    const seen: Array<string | undefined> = [];
    const call = traceIncomingCalls()((async () => {
      seen.push(trace.getSpanContext(context.active())?.spanId);
      return {};
    }) as never);
    const req = {
      header: new Headers(),
      method: { name: "GetApiKey", parent: { typeName: "loom.identity.v1.IdentityService" } },
    } as never;
    exporter.reset();
    await context.with(parent(TraceFlags.NONE), () => call(req));
    await processor.forceFlush();
    expect(exporter.getFinishedSpans()).toEqual([]);
    expect(seen).toEqual(["b7ad6b7169203331"]);
    await context.with(parent(TraceFlags.SAMPLED), () => call(req));
    await processor.forceFlush();
    const [span] = exporter.getFinishedSpans();
    expect(span?.name).toBe("loom.identity.v1.IdentityService/GetApiKey");
    expect(span?.parentSpanContext?.spanId).toBe("b7ad6b7169203331");
    expect(seen[1]).toBe(span?.spanContext().spanId);
  });

  it("an outgoing call under an unsampled trace carries that trace on without a span; under a sampled one, its CLIENT span; outside a trace, nothing", async () => {
    const sent: Array<string | null> = [];
    const call = traceOutgoingCalls()((async (req: { header: Headers }) => {
      sent.push(req.header.get("traceparent"));
      return {};
    }) as never);
    exporter.reset();
    await context.with(parent(TraceFlags.NONE), () => call(rpc() as never));
    await processor.forceFlush();
    expect(sent[0]).toBe("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00");
    expect(exporter.getFinishedSpans()).toEqual([]);
    await context.with(parent(TraceFlags.SAMPLED), () => call(rpc() as never));
    await processor.forceFlush();
    const [span] = exporter.getFinishedSpans();
    expect(span?.parentSpanContext?.spanId).toBe("b7ad6b7169203331");
    expect(sent[1]).toBe(`00-0af7651916cd43dd8448eb211c80319c-${span?.spanContext().spanId}-01`);
    await call(rpc() as never);
    expect(sent[2]).toBeNull();
  });

  it("a call that arrives with an unsampled traceparent makes no span and enters no context: its trace is read from its headers", async () => {
    const seen: Array<string | undefined> = [];
    const req = rpc();
    const call = traceIncomingCalls()((async () => {
      seen.push(trace.getSpanContext(context.active())?.traceId, callTraceparent(req.header));
      return {};
    }) as never);
    req.header.set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
    exporter.reset();
    await call(req as never);
    await processor.forceFlush();
    expect(seen).toEqual([undefined, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"]);
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it("a sampled call's traceparent is its active span's, whatever its headers say", async () => {
    const span = startSpan("loom.runs.v1.RunsService/CreateAssistantRun", {}, parent(TraceFlags.SAMPLED));
    const header = new Headers({ traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00" });
    const seen = context.with(trace.setSpan(ROOT_CONTEXT, span), () => callTraceparent(header));
    span.end();
    expect(seen).toBe(`00-0af7651916cd43dd8448eb211c80319c-${span.spanContext().spanId}-01`);
  });

  it("a request's headers are parsed only when they carry trace context", () => {
    expect(contextOfHeaders({ host: "loom" })).toBe(ROOT_CONTEXT);
    const continued = contextOfHeaders({
      host: "loom",
      traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    });
    expect(trace.getSpanContext(continued)).toMatchObject({
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      isRemote: true,
    });
  });

  it("a new unsampled trace's call headers are what the W3C propagator writes; a continued one's keep its trace state", () => {
    const unsampled = trace.wrapSpanContext({
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      traceFlags: TraceFlags.NONE,
    });
    expect(unsampledTraceHeaders(ROOT_CONTEXT, unsampled)).toEqual({
      traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
    });
    expect(unsampledTraceHeaders(ROOT_CONTEXT, unsampled)).toEqual(traceHeadersOf(withSpan(ROOT_CONTEXT, unsampled)));
    const incoming = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "b7ad6b7169203331",
      traceFlags: TraceFlags.NONE,
      isRemote: true,
      traceState: createTraceState("vendor=abc"),
    });
    const continued = trace.wrapSpanContext({ ...trace.getSpanContext(incoming)!, spanId: "00f067aa0ba902b7" });
    expect(unsampledTraceHeaders(incoming, continued)).toEqual({
      traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
      tracestate: "vendor=abc",
    });
  });

  it("reads an unsampled traceparent from its flags alone", () => {
    const ids = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7";
    expect([`${ids}-00`, `${ids}-02`, `${ids}-0e`].map(isUnsampledTraceparent)).toEqual([true, true, true]);
    expect(
      [`${ids}-01`, `${ids}-03`, `${ids}-ff`, `${ids}-0`, `${ids}-000`, `${ids}_00`, "", null, undefined].map(
        isUnsampledTraceparent,
      ),
    ).toEqual(Array(9).fill(false));
  });

  it("stays off with OTEL_SDK_DISABLED, as the SDK would, endpoint or not", () => {
    expect(
      startTracing("loom-test", { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_SDK_DISABLED: "true" })
        .enabled,
    ).toBe(false);
  });
});
