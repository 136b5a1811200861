import { ROOT_CONTEXT, SpanKind, TraceFlags } from "@opentelemetry/api";
import { isTracingSuppressed, suppressTracing } from "@opentelemetry/core";
import * as sdk from "@opentelemetry/sdk-trace";
import { InMemorySpanExporter, type Sampler, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { describe, expect, it } from "vitest";
import { samplerFromEnv, TraceIds, type TraceRoots, unsampledRoot } from "../src/trace-roots.ts";

/** An SDK tracer and Loom's roots sharing one sampler and one id source, as startTracing wires them. */
function wired(sampler: Sampler) {
  const roots: TraceRoots = { sampler, ids: new TraceIds(), isTracingSuppressed };
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({
    sampler,
    idGenerator: roots.ids,
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  return { roots, exporter, tracer: provider.getTracer("loom") };
}

describe("a trace's root", () => {
  it("that the sampler does not keep is a span of fresh ids that records nothing, made without the SDK", () => {
    const { roots, exporter } = wired(new sdk.TraceIdRatioBasedSampler(0));
    const spans = Array.from(
      { length: 3 },
      () => unsampledRoot(roots, "GET", { kind: SpanKind.SERVER }, ROOT_CONTEXT)!,
    );
    for (const span of spans) {
      expect(span.isRecording()).toBe(false);
      expect(span.spanContext()).toMatchObject({
        traceId: expect.stringMatching(/^[0-9a-f]{32}$/),
        spanId: expect.stringMatching(/^[0-9a-f]{16}$/),
        traceFlags: TraceFlags.NONE,
      });
    }
    expect(new Set(spans.map((span) => span.spanContext().traceId)).size).toBe(3);
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it("that the sampler keeps is the SDK's span, on the very trace id the sampler was shown", () => {
    const shown: string[] = [];
    const keepAll: Sampler = {
      shouldSample: (_context, traceId) => (shown.push(traceId), { decision: sdk.SamplingDecision.RECORD_AND_SAMPLED }),
    };
    const { roots, tracer } = wired(keepAll);
    expect(unsampledRoot(roots, "GET", { kind: SpanKind.SERVER }, ROOT_CONTEXT)).toBeUndefined();
    const span = tracer.startSpan("GET", { kind: SpanKind.SERVER }, ROOT_CONTEXT);
    expect(span.isRecording()).toBe(true);
    expect(shown).toEqual([span.spanContext().traceId, span.spanContext().traceId]);
    // Handed over once: the next root the SDK starts gets a trace of its own.
    expect(tracer.startSpan("GET", {}, ROOT_CONTEXT).spanContext().traceId).not.toBe(span.spanContext().traceId);
  });

  it("is kept by Loom exactly when the SDK's own decision keeps it (a ratio of one half, 200 roots)", () => {
    const { roots, tracer } = wired(
      samplerFromEnv(sdk, { OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.5" }),
    );
    let kept = 0;
    for (let i = 0; i < 200; i++) {
      if (unsampledRoot(roots, "GET", {}, ROOT_CONTEXT)) continue;
      kept++;
      expect(tracer.startSpan("GET", {}, ROOT_CONTEXT).isRecording()).toBe(true);
    }
    expect(kept).toBeGreaterThan(50);
    expect(kept).toBeLessThan(150);
  });

  it("is left to the SDK where tracing is suppressed (its own export's context)", () => {
    const { roots } = wired(new sdk.AlwaysOffSampler());
    expect(unsampledRoot(roots, "POST", {}, suppressTracing(ROOT_CONTEXT))).toBeUndefined();
  });
});

describe("the sampler named by OTEL_TRACES_SAMPLER", () => {
  it("is the one the SDK would build from the same variables", () => {
    const named = (env: NodeJS.ProcessEnv) => samplerFromEnv(sdk, env).toString();
    expect(named({})).toBe(
      "ParentBased{root=AlwaysOnSampler, remoteParentSampled=AlwaysOnSampler, remoteParentNotSampled=AlwaysOffSampler, localParentSampled=AlwaysOnSampler, localParentNotSampled=AlwaysOffSampler}",
    );
    expect(named({ OTEL_TRACES_SAMPLER: "parentbased_always_on" })).toBe(named({}));
    expect(named({ OTEL_TRACES_SAMPLER: "always_on" })).toBe("AlwaysOnSampler");
    expect(named({ OTEL_TRACES_SAMPLER: "always_off" })).toBe("AlwaysOffSampler");
    expect(named({ OTEL_TRACES_SAMPLER: "parentbased_always_off" })).toMatch(/^ParentBased\{root=AlwaysOffSampler,/);
    expect(named({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.25" })).toBe(
      "TraceIdRatioBased{0.25}",
    );
    expect(named({ OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.1" })).toMatch(
      /^ParentBased\{root=TraceIdRatioBased\{0.1\},/,
    );
    // Out of range, or not a number: the SDK's default ratio, 1.
    expect(named({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "2" })).toBe("TraceIdRatioBased{1}");
    expect(named({ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "many" })).toBe(
      "TraceIdRatioBased{1}",
    );
    expect(named({ OTEL_TRACES_SAMPLER: "no_such_sampler" })).toBe(named({}));
  });
});

describe("trace ids", () => {
  it("are lowercase hex of the right length, never repeated, across refills of the pool", () => {
    const ids = new TraceIds();
    const traceIds = Array.from({ length: 600 }, () => ids.generateTraceId());
    const spanIds = Array.from({ length: 600 }, () => ids.generateSpanId());
    expect(traceIds.every((id) => /^[0-9a-f]{32}$/.test(id) && id !== "0".repeat(32))).toBe(true);
    expect(spanIds.every((id) => /^[0-9a-f]{16}$/.test(id) && id !== "0".repeat(16))).toBe(true);
    expect(new Set(traceIds).size).toBe(600);
    expect(new Set(spanIds).size).toBe(600);
  });
});
