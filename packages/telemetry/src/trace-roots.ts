import { randomFillSync } from "node:crypto";
import {
  type Context,
  diag,
  SamplingDecision,
  type Span,
  SpanKind,
  type SpanOptions,
  TraceFlags,
  trace,
} from "@opentelemetry/api";
import type { IdGenerator, Sampler } from "@opentelemetry/sdk-trace";

/**
 * Where a trace starts: the sampler the SDK uses (one object, shared) and
 * the ids it gives spans. With them Loom decides a root span's fate before
 * the SDK is asked for one: a trace that is not sampled (90% of requests at
 * a 10% ratio) gets its ids and nothing else, where the SDK's `startSpan`
 * cost ~5 µs of a ~60 µs request for a span that records nothing
 * (docs/benchmarks.md, "Traces: a root the sampler drops is made without the SDK").
 */
export interface TraceRoots {
  sampler: Sampler;
  ids: TraceIds;
  /** The SDK's: work it does itself (an export) says so in its context, and starts no trace. */
  isTracingSuppressed(context: Context): boolean;
}

/**
 * The span that records nothing for a new trace the sampler does not keep,
 * or undefined when it keeps it: then the SDK's span must be made, and it
 * gets the very trace id the sampler was shown (`TraceIds.handOver`), so the
 * SDK's own decision, which runs again, sees the same trace.
 */
export function unsampledRoot(
  roots: TraceRoots,
  name: string,
  options: SpanOptions,
  parent: Context,
): Span | undefined {
  if (roots.isTracingSuppressed(parent)) return undefined;
  const traceId = roots.ids.generateTraceId();
  const sampling = roots.sampler.shouldSample(
    parent,
    traceId,
    name,
    options.kind ?? SpanKind.INTERNAL,
    options.attributes ?? {},
    [],
  );
  if (sampling.decision !== SamplingDecision.NOT_RECORD) {
    roots.ids.handOver(traceId);
    return undefined;
  }
  return trace.wrapSpanContext({
    traceId,
    spanId: roots.ids.generateSpanId(),
    traceFlags: TraceFlags.NONE,
    traceState: sampling.traceState,
  });
}

/**
 * Trace and span ids (lowercase hex, never all zeros) cut from a pool of
 * random bytes filled 4 KiB at a time, for the SDK's spans and Loom's
 * unsampled roots alike; and a trace id handed over for the next span the
 * SDK starts.
 */
export class TraceIds implements IdGenerator {
  private readonly pool = Buffer.alloc(4096);
  private taken = this.pool.length;
  private handedOver: string | undefined;

  /** The next root span the SDK starts gets this trace id (it asks for one right away: `unsampledRoot`). */
  handOver(traceId: string): void {
    this.handedOver = traceId;
  }

  generateTraceId(): string {
    const handedOver = this.handedOver;
    if (handedOver === undefined) return this.hex(16);
    this.handedOver = undefined;
    return handedOver;
  }

  generateSpanId(): string {
    return this.hex(8);
  }

  private hex(bytes: number): string {
    if (this.taken + bytes > this.pool.length) {
      randomFillSync(this.pool);
      this.taken = 0;
    }
    const id = this.pool.toString("hex", this.taken, (this.taken += bytes));
    // All zeros is W3C's invalid id: drawn once in 2^64 at worst, and then drawn again.
    return id === zeros[bytes] ? this.hex(bytes) : id;
  }
}

const zeros: Record<number, string> = { 8: "0".repeat(16), 16: "0".repeat(32) };

/**
 * The sampler OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG name, as the
 * SDK builds it from them (its own function is not exported), from the SDK's
 * classes: made here so Loom holds the same object it hands the SDK. Unset,
 * the SDK's default: every trace that a sampled parent does not decide.
 */
export function samplerFromEnv(sdk: typeof import("@opentelemetry/sdk-trace"), env: NodeJS.ProcessEnv): Sampler {
  const ratio = () => {
    const raw = env.OTEL_TRACES_SAMPLER_ARG?.trim();
    const value = raw ? Number(raw) : Number.NaN;
    if (Number.isNaN(value) || value < 0 || value > 1) {
      diag.error(`OTEL_TRACES_SAMPLER_ARG=${raw ?? ""} is not a ratio in [0..1], defaulting to 1.`);
      return 1;
    }
    return value;
  };
  const name = env.OTEL_TRACES_SAMPLER?.trim();
  switch (name) {
    case "always_on":
      return new sdk.AlwaysOnSampler();
    case "always_off":
      return new sdk.AlwaysOffSampler();
    case "parentbased_always_off":
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() });
    case "traceidratio":
      return new sdk.TraceIdRatioBasedSampler(ratio());
    case "parentbased_traceidratio":
      return new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(ratio()) });
    default:
      if (name && name !== "parentbased_always_on")
        diag.error(`unknown OTEL_TRACES_SAMPLER value "${name}", using parentbased_always_on`);
      return new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() });
  }
}
