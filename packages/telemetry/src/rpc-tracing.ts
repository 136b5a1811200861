import type { DescMethod } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { context, propagation, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { carriesTraceContext, headersGetter, isSampled, isUnsampledTraceparent, startSpan } from "./tracing.ts";

const headerSetter = { set: (carrier: Headers, key: string, value: string) => carrier.set(key, value) };

/**
 * Client side of a traced call: a CLIENT span per call, its W3C
 * `traceparent` in the request headers (the server's span continues it).
 * Under a trace that is not sampled there is nothing to record: the call
 * only carries that trace's context on, so the server's work stays in it.
 */
export function traceOutgoingCalls(): Interceptor {
  return (next) => async (req) => {
    const active = context.active();
    if (!isSampled(active)) {
      propagation.inject(active, req.header, headerSetter);
      return next(req);
    }
    const span = startSpan(
      procedureOf(req.method),
      { kind: SpanKind.CLIENT, attributes: rpcAttributes(req.method) },
      active,
    );
    const ctx = trace.setSpan(active, span);
    propagation.inject(ctx, req.header, headerSetter);
    return settle(span, () => context.with(ctx, () => next(req)));
  };
}

/**
 * Server side: a SERVER span per call, the child of the caller's
 * `traceparent` header when there is one, else of whatever is active (a call
 * over the in-process transport keeps the caller's context as it is).
 */
export function traceIncomingCalls(): Interceptor {
  return (next) => (req) => {
    if (isUnsampledTraceparent(req.header.get("traceparent"))) return next(req);
    const active = context.active();
    const parent = carriesTraceContext((name) => req.header.has(name))
      ? propagation.extract(active, req.header, headersGetter)
      : active;
    // Under a trace that is not sampled there is nothing to record: the call runs as it came, its
    // trace in its headers for what keeps it (`callTraceparent`). Entering a context for it cost
    // more than anything else tracing does on an unsampled request (docs/decisions.md, "Traces").
    if (!isSampled(parent)) return next(req);
    const span = startSpan(
      procedureOf(req.method),
      { kind: SpanKind.SERVER, attributes: rpcAttributes(req.method) },
      parent,
    );
    return settle(span, () => context.with(trace.setSpan(parent, span), () => next(req)));
  };
}

/** `loom.runs.v1.RunsService/CreateAssistantRun`: gRPC's span name. */
function procedureOf(method: DescMethod): string {
  return `${method.parent.typeName}/${method.name}`;
}

function rpcAttributes(method: DescMethod) {
  return { "rpc.system": "connect_rpc", "rpc.service": method.parent.typeName, "rpc.method": method.name };
}

/**
 * Ends the span when the call is answered (for a streaming call: when its
 * response starts; what the stream does later is not in the trace), with
 * the Connect code of a failure.
 */
async function settle<T>(span: Span, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const code = error instanceof ConnectError ? error.code : Code.Unknown;
    span.setAttribute("rpc.connect_rpc.error_code", Code[code]);
    span.setStatus({ code: SpanStatusCode.ERROR, message: Code[code] });
    throw error;
  } finally {
    span.end();
  }
}
