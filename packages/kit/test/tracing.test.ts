import { AsyncLocalStorage } from "node:async_hooks";
import { context, ROOT_CONTEXT, trace, TraceFlags, type Context, type ContextManager } from "@opentelemetry/api";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { afterAll, describe, expect, it } from "vitest";
import { traceIncomingCalls } from "../src/rpc-tracing.ts";
import { startSpan } from "../src/tracing.ts";

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
afterAll(() => {
  trace.disable();
  context.disable();
});

const parent = (traceFlags: TraceFlags) =>
  trace.setSpanContext(ROOT_CONTEXT, { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags, isRemote: true });

describe("Loom's spans", () => {
  it("are recorded, with their attributes, under a sampled trace", async () => {
    exporter.reset();
    startSpan("loom.identity.v1.IdentityService/GetApiKey", { attributes: { "rpc.method": "GetApiKey" } }, parent(TraceFlags.SAMPLED)).end();
    await processor.forceFlush();
    const [span] = exporter.getFinishedSpans();
    expect(span?.name).toBe("loom.identity.v1.IdentityService/GetApiKey");
    expect(span?.parentSpanContext?.spanId).toBe("b7ad6b7169203331");
    expect(span?.attributes).toEqual({ "rpc.method": "GetApiKey" });
  });

  it("are not made under a trace that is not sampled: the trace's context goes on as it came", async () => {
    exporter.reset();
    const span = startSpan("loom.identity.v1.IdentityService/GetApiKey", { attributes: { "rpc.method": "GetApiKey" } }, parent(TraceFlags.NONE));
    span.end();
    await processor.forceFlush();
    expect(span.isRecording()).toBe(false);
    expect(span.spanContext()).toMatchObject({ traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: TraceFlags.NONE });
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it("a Connect call under an unsampled trace makes no span and runs in that trace; under a sampled one, one span, its child", async () => {
    const seen: Array<string | undefined> = [];
    const call = traceIncomingCalls()((async () => {
      seen.push(trace.getSpanContext(context.active())?.spanId);
      return {};
    }) as never);
    const req = { header: new Headers(), method: { name: "GetApiKey", parent: { typeName: "loom.identity.v1.IdentityService" } } } as never;
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
});
