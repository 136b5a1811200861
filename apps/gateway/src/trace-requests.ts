import type { Context, Middleware, Next } from "koa";
import { contextOfHeaders, inSpan, nameActiveSpan, SpanKind, SpanStatusCode, tracing } from "@loom/kit/tracing";

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
  return (ctx: Context, next: Next) =>
    // Probes are not traced: a kubelet asking every few seconds would bury the requests.
    probes.has(ctx.path) ? next() : inSpan(`${ctx.method} unmatched`, { kind: SpanKind.SERVER, attributes: { "http.request.method": ctx.method, "url.path": ctx.path } }, contextOfHeaders(ctx.headers), async (span) => {
      ctx.set(traceIdHeader, span.spanContext().traceId);
      try {
        await next();
      } finally {
        span.setAttribute("http.response.status_code", ctx.status);
        if (ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      }
    });
}

/** Names the request's span after the operation that answers it (`CreateAssistantRun`). */
export function nameRequestSpan(operationId: string, route: string): void {
  nameActiveSpan(operationId, { "http.route": route });
}
