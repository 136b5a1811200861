import { createRequire } from "node:module";
import {
  type Context,
  context,
  INVALID_SPAN_CONTEXT,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  type Span,
  type SpanOptions,
  SpanStatusCode,
  type TextMapGetter,
  TraceFlags,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import { samplerFromEnv, TraceIds, type TraceRoots, unsampledRoot } from "./trace-roots.ts";

/** What a process knows about its tracing: whether it is on, and how to flush it at shutdown. */
export interface Tracing {
  enabled: boolean;
  /** Exports the spans still buffered; a no-op when tracing is off. */
  shutdown(): Promise<void>;
}

let started: Tracing | undefined;

/**
 * Starts OpenTelemetry for this process, configured only by the standard
 * OTEL_* variables, and only when OTEL_EXPORTER_OTLP_ENDPOINT (or its traces
 * variant) is set: without it, no SDK is loaded and every span is the API's
 * no-op. `serviceName` ("loom-runs") is the default of OTEL_SERVICE_NAME.
 *
 * Must run before the MongoDB driver is loaded (its instrumentation hooks
 * `require`): each main imports its `tracing.ts` first (docs/decisions.md,
 * "Traces"). Traces only: metrics are Prometheus's (/metrics) and logs stay
 * on stdout, so the SDK's OTLP metrics and logs are not started. The SDK is
 * loaded (synchronously, before anything else) only when tracing is on.
 */
export function startTracing(serviceName: string, env: NodeJS.ProcessEnv = process.env): Tracing {
  if (started) return started;
  const off =
    (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) ||
    env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true";
  if (off) return (started = { enabled: false, shutdown: async () => {} });
  const load = createRequire(import.meta.url);
  const { NodeSDK } = load("@opentelemetry/sdk-node") as typeof import("@opentelemetry/sdk-node");
  const sdkTrace = load("@opentelemetry/sdk-trace") as typeof import("@opentelemetry/sdk-trace");
  const { isTracingSuppressed } = load("@opentelemetry/core") as typeof import("@opentelemetry/core");
  const traceRoots: TraceRoots = { sampler: samplerFromEnv(sdkTrace, env), ids: new TraceIds(), isTracingSuppressed };
  roots = traceRoots;
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME || serviceName,
    instrumentations: env.MONGODB_URL ? [mongoInstrumentation(load)] : [],
    metricReaders: [],
    logRecordProcessors: [],
    // The very sampler and ids Loom decides new traces with (`unsampledRoot`).
    sampler: traceRoots.sampler,
    idGenerator: traceRoots.ids,
  });
  sdk.start();
  return (started = { enabled: true, shutdown: () => sdk.shutdown().catch(() => {}) });
}

/**
 * MongoDB's spans, for a process that keeps its data there (MONGODB_URL). Only
 * then: the instrumentation hooks `require` for the whole process's life, and
 * a process on SQLite (the all-in-one's default, the gateway) has nothing for
 * it to see (docs/decisions.md, "Traces").
 */
function mongoInstrumentation(load: NodeJS.Require) {
  const { MongoDBInstrumentation } = load(
    "@opentelemetry/instrumentation-mongodb",
  ) as typeof import("@opentelemetry/instrumentation-mongodb");
  return new MongoDBInstrumentation();
}

/** The sampler and ids Loom starts traces with, the SDK's own (set by `startTracing`). */
let roots: TraceRoots | undefined;

/** This process's tracing (off until startTracing ran). */
export function tracing(): Tracing {
  return started ?? { enabled: false, shutdown: async () => {} };
}

let sdkTracer: Tracer | undefined;

/**
 * The tracer of Loom's own spans (gateway requests, RPCs, runs, the bus).
 * Kept only once tracing has started: one taken before startTracing would
 * stay a no-op (the SDK registers itself through its own copy of the API).
 */
export function tracer(): Tracer {
  if (!started?.enabled) return trace.getTracer("loom");
  return (sdkTracer ??= trace.getTracer("loom"));
}

export { type Context, type Span, SpanKind, SpanStatusCode } from "@opentelemetry/api";

/** The W3C traceparent of the span active in `ctx`, or undefined when there is none (tracing off). */
export function traceparentOf(ctx: Context = context.active()): string | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier.traceparent;
}

let propagatedFields: string[] | undefined;

/**
 * The headers the configured propagators read and write (W3C's
 * `traceparent`, `tracestate` and `baggage` by default; OTEL_PROPAGATORS
 * may name others), asked once tracing has started.
 */
export function traceHeaderNames(): string[] {
  if (!started?.enabled) return propagation.fields();
  return (propagatedFields ??= propagation.fields());
}

/** Whether a header carrier holds any trace context to extract (most requests carry none: nothing to parse). */
export function carriesTraceContext(has: (name: string) => boolean): boolean {
  for (const name of traceHeaderNames()) if (has(name)) return true;
  return false;
}

/**
 * The traceparent a Connect handler's work belongs to: the active span's,
 * or, for a call under a trace that is not sampled (which runs outside any
 * context: nothing of it records), the one its caller sent in its headers.
 * What a run keeps so its execution continues the trace of its creation.
 */
export function callTraceparent(requestHeader: Headers): string | undefined {
  return traceparentOf() ?? requestHeader.get("traceparent") ?? undefined;
}

/** The trace headers (`traceparent`, …) that carry `ctx`'s trace to a callee: for calls made outside that context. */
export function traceHeadersOf(ctx: Context): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

/**
 * Whether a `traceparent` header (`00-<trace id>-<span id>-<flags>`) names a
 * trace that is not sampled (its flags' last bit clear), read from its last
 * character, without parsing it: most calls, at a low sampling ratio. False
 * without one, or when the propagators in use do not read it
 * (OTEL_PROPAGATORS). One malformed in its ids is not caught here, and needs
 * not be: parsed, it would continue no trace, and a call outside a sampled
 * trace makes no span either (`traceIncomingCalls`).
 */
export function isUnsampledTraceparent(traceparent: string | null | undefined): boolean {
  if (traceparent?.length !== 55 || traceparent.charCodeAt(52) !== dash || !propagatesW3c()) return false;
  const flagsDigit = traceparent.charCodeAt(54);
  return evenHexDigits.has(flagsDigit);
}

const dash = 0x2d;
/** 0 2 4 6 8 a c e: the last hex digit of flags whose sampled bit is clear. */
const evenHexDigits = new Set([..."02468ace"].map((digit) => digit.charCodeAt(0)));

let w3cOnly: boolean | undefined;

/**
 * Whether the propagators in use write W3C's headers and no others (the
 * default, `tracecontext,baggage`): then a trace's context is its
 * `traceparent`, which Loom can write itself (`unsampledTraceHeaders`).
 */
function propagatesW3c(): boolean {
  if (w3cOnly !== undefined) return w3cOnly;
  const names = traceHeaderNames();
  const only = names.includes("traceparent") && names.every((name) => w3cHeaders.has(name));
  // Kept once tracing has started (before, the propagators are the API's no-op).
  if (started?.enabled) w3cOnly = only;
  return only;
}

const w3cHeaders = new Set(["traceparent", "tracestate", "baggage"]);

/**
 * The trace headers that carry a span that records nothing (a request whose
 * trace is not sampled) to the calls made for it. For a new trace (no
 * incoming context: no baggage, no trace state) with the W3C propagators,
 * that is its `traceparent`, written here: the propagators' inject built two
 * contexts and a carrier for it, on every request that is not sampled.
 */
export function unsampledTraceHeaders(parent: Context, span: Span): Record<string, string> {
  const spanContext = span.spanContext();
  if (parent !== ROOT_CONTEXT || spanContext.traceState !== undefined || !propagatesW3c())
    return traceHeadersOf(withSpan(parent, span));
  return { traceparent: `00-${spanContext.traceId}-${spanContext.spanId}-0${spanContext.traceFlags.toString(16)}` };
}

/** The context the W3C trace headers of an incoming request continue (ROOT without them). */
export function contextOfHeaders(headers: Record<string, string | string[] | undefined>): Context {
  return carriesTraceContext((name) => headers[name] !== undefined)
    ? propagation.extract(ROOT_CONTEXT, headers)
    : ROOT_CONTEXT;
}

/** Whether `ctx` is inside a trace that records: false with tracing off, outside any trace, and under an unsampled one. */
export function isSampled(ctx: Context): boolean {
  const spanContext = trace.getSpanContext(ctx);
  return spanContext !== undefined && (spanContext.traceFlags & TraceFlags.SAMPLED) !== 0;
}

/**
 * Renames the active span (the gateway's request span, once the operation
 * is known) and sets one attribute, if it records: under an unsampled
 * trace, nothing is made.
 */
export function nameActiveSpan(name: string, attribute: string, value: string): void {
  const span = trace.getActiveSpan();
  if (!span?.isRecording()) return;
  span.updateName(name);
  span.setAttribute(attribute, value);
}

/** The trace id (32 hex digits) of a W3C traceparent, or undefined. */
export function traceIdOf(traceparent: string | undefined): string | undefined {
  const traceId = traceparent?.split("-")[1];
  return traceId && /^[0-9a-f]{32}$/.test(traceId) ? traceId : undefined;
}

/** The context a stored or received traceparent continues (ROOT when absent or malformed). */
export function contextOf(traceparent: string | undefined, base: Context = ROOT_CONTEXT): Context {
  return traceparent ? propagation.extract(base, { traceparent }) : base;
}

/** Reads W3C trace context from a Headers-like object (Connect's request headers, NATS headers). */
export const headersGetter: TextMapGetter<{ get(key: string): string | null | undefined; keys?(): Iterable<string> }> =
  {
    get: (carrier, key) => carrier.get(key) ?? undefined,
    keys: (carrier) => (carrier.keys ? [...carrier.keys()] : []),
  };

/**
 * Runs `work` inside a new span, the child of `parent` (default: the active
 * context), ended when it settles, its error recorded: the one way Loom wraps
 * a piece of work in a span of its own. With tracing off, `work` runs as is.
 */
export function inSpan<T>(
  name: string,
  options: SpanOptions,
  parent: Context | undefined,
  work: (span: Span) => Promise<T>,
): Promise<T> {
  if (!started?.enabled) return work(noSpan);
  const within = parent ?? context.active();
  const span = startSpan(name, options, within);
  // A span that records nothing needs no settling: the work just runs in its trace.
  if (!span.isRecording()) return runInSpan(span, within, () => work(span));
  return runInSpan(span, within, () => endWhenSettled(span, () => work(span)));
}

/**
 * A new span under `parent`; but under a trace that is not sampled, a
 * stand-in carrying that trace's context (nothing under an unsampled root
 * records, and the SDK would still make a span, ids and all, for each: with
 * 10% of traces sampled, that was most of tracing's cost). Attributes are
 * set only on a span that records.
 */
export function startSpan(name: string, options: SpanOptions, parent: Context): Span {
  const above = trace.getSpanContext(parent);
  if (above && !(above.traceFlags & TraceFlags.SAMPLED) && isSpanContextValid(above))
    return trace.wrapSpanContext(above);
  // A new trace: one the sampler does not keep is made here, without the SDK (`unsampledRoot`).
  const unsampled = !above && roots ? unsampledRoot(roots, name, options, parent) : undefined;
  if (unsampled) return unsampled;
  const { attributes, ...rest } = options;
  const span = tracer().startSpan(name, rest, parent);
  if (attributes && span.isRecording()) span.setAttributes(attributes);
  return span;
}

/** `inSpan` for synchronous work (a bus delivery, an SSE frame handed to subscribers). */
export function inSpanSync<T>(
  name: string,
  options: SpanOptions,
  parent: Context | undefined,
  work: (span: Span) => T,
): T {
  if (!started?.enabled) return work(noSpan);
  const within = parent ?? context.active();
  const span = startSpan(name, options, within);
  if (!span.isRecording()) return runInSpan(span, within, () => work(span));
  return runInSpan(span, within, () => {
    try {
      return work(span);
    } catch (error) {
      throw failed(span, error);
    } finally {
      span.end();
    }
  });
}

/**
 * Runs `work` with `span` active (the child of `parent`); the caller ends
 * the span. For a span whose start and end the caller shapes itself (the
 * gateway's request span).
 */
export function runInSpan<T>(span: Span, parent: Context, work: () => T): T {
  return context.with(withSpan(parent, span), work);
}

/** `parent` with `span` as its active span. */
export function withSpan(parent: Context, span: Span): Context {
  return trace.setSpan(parent, span);
}

/** Runs `work` and ends `span` once it settles, its error recorded. */
export async function endWhenSettled<T>(span: Span, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw failed(span, error);
  } finally {
    span.end();
  }
}

/** What work gets for its span with tracing off: records nothing. */
const noSpan = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** Marks the span failed with the error, and gives the error back to be thrown. */
function failed(span: Span, error: unknown): unknown {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
  return error;
}
