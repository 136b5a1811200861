import {
  contextOfHeaders,
  endWhenSettled,
  nameActiveSpan,
  runInSpan,
  SpanKind,
  SpanStatusCode,
  startSpan,
  tracing,
  unsampledTraceHeaders,
} from "@loom/telemetry/tracing";
import type { Context, Middleware, Next } from "koa";

const probes = new Set(["/healthz", "/readyz"]);

/** The response header naming the request's trace (docs/decisions.md, "Traces"). */
export const traceIdHeader = "X-Trace-Id";

/**
 * One trace per request: a SERVER span (continuing the caller's
 * `traceparent`, if it sent one) around everything the gateway does for it,
 * named by the operation once the router finds it (`nameRequestSpan`), and
 * its trace id in `X-Trace-Id` on every answer but the probes'. Nothing
 * with tracing off.
 */
export function traceRequests(): Middleware {
  if (!tracing().enabled) return (_ctx, next) => next();
  return (ctx: Context, next: Next) => {
    // Probes are not traced: a kubelet asking every few seconds would bury the requests.
    if (probes.has(ctx.path)) return next();
    const parent = contextOfHeaders(ctx.headers);
    // The sampler decides here, at the root. Named by the method alone until the router names it.
    const span = startSpan(ctx.method, { kind: SpanKind.SERVER }, parent);
    ctx.set(traceIdHeader, span.spanContext().traceId);
    // A request whose trace is not sampled (most, at a low sampling ratio) records nothing: no
    // attributes, no settling, and no context to run in, which cost the most; its calls carry
    // its trace in their headers (`traceHeadersFor`), so what they store and start joins it.
    if (!span.isRecording()) {
      ctx.state.traceHeaders = unsampledTraceHeaders(parent, span);
      return next();
    }
    span.updateName(`${ctx.method} unmatched`);
    span.setAttributes({ "http.request.method": ctx.method, "url.path": ctx.path });
    return runInSpan(span, parent, () =>
      endWhenSettled(span, () =>
        next().finally(() => {
          span.setAttribute("http.response.status_code", ctx.status);
          if (ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        }),
      ),
    );
  };
}

/**
 * The trace headers a request's Connect calls send: its trace when it is
 * not sampled (a sampled one is the active context, which the transports
 * carry on themselves).
 */
export function traceHeadersFor(ctx: Context): Record<string, string> | undefined {
  return ctx.state.traceHeaders as Record<string, string> | undefined;
}

/** Names the request's span after the operation that answers it (`CreateAssistantRun`). */
export function nameRequestSpan(operationId: string, route: string): void {
  nameActiveSpan(operationId, "http.route", route);
}
