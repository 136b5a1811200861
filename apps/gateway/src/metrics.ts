import type { ServerResponse } from "node:http";
import type { Router } from "@koa/router";
import { Counter, Gauge, Histogram, metricsRegistry } from "@loom/telemetry/metrics";
import type { Context, Next } from "koa";

/** The gateway's series (infra/README.md, "Metrics and alerts"), in the process's one registry. */
const httpDuration = new Histogram({
  name: "loom_http_request_duration_seconds",
  help: "Public HTTP requests until their answer starts (an SSE stream's: until it opens), by operation id and status",
  labelNames: ["operation", "status"] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [metricsRegistry],
});

const sseOpen = new Gauge({
  name: "loom_sse_connections_open",
  help: "SSE event streams open on this gateway",
  registers: [metricsRegistry],
});

/** Events written to SSE streams: an event counts once per stream that got it. */
export const eventsDelivered = new Counter({
  name: "loom_events_delivered_total",
  help: "Events delivered to SSE streams, once per stream",
  registers: [metricsRegistry],
});

/** The label of a request no operation serves (an unknown path or method): one value, however many paths are tried. */
const unmatchedOperation = "unmatched";

/**
 * Observes every request with the id of the operation that served it: the
 * name of the route that matched (mountOperations names each by its id), or
 * `ctx.state.operationId`, set by the paths outside the operations (probes,
 * blobs); for a request refused before routing (401, 429), the operation its
 * method and path would have reached.
 */
export function observeRequests(router: Router) {
  const operationOf = (ctx: Context): string => {
    const id =
      (ctx as { _matchedRouteName?: string })._matchedRouteName ?? (ctx.state.operationId as string | undefined);
    if (id) return id;
    const named = router.match(ctx.path, ctx.method).pathAndMethod.find((layer) => layer.name);
    return named?.name ?? unmatchedOperation;
  };
  return async (ctx: Context, next: Next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      // An answer the route wrote itself (blobs) has its status on the response.
      const status = String(ctx.respond === false ? ctx.res.statusCode : ctx.status);
      httpDuration.observe({ operation: operationOf(ctx), status }, (performance.now() - started) / 1000);
    }
  };
}

/** Counts an SSE stream open until its response closes, however it ends. */
export function trackSseConnection(res: ServerResponse): void {
  sseOpen.inc();
  res.once("close", () => sseOpen.dec());
}
