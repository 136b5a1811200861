import { ROOT_CONTEXT, trace, TraceFlags } from "@opentelemetry/api";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { afterAll, describe, expect, it } from "vitest";
import { startSpan } from "../src/tracing.ts";

const exporter = new InMemorySpanExporter();
const processor = new SimpleSpanProcessor({ exporter });
trace.setGlobalTracerProvider(new TracerProvider({ spanProcessors: [processor] }));
afterAll(() => trace.disable());

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
});
