import { createServer } from "node:http";
import { metricsRegistry } from "@loom/telemetry/metrics";
import { collectDefaultMetrics } from "prom-client";
import { connectionServerOptions, defaultConnectionLimits, limitConnections } from "./connection-limits.ts";
import { listen, type RunningServer } from "./rpc-server.ts";

let defaultsCollected = false;

/**
 * `GET /metrics` (Prometheus text format) on a port of its own, apart from
 * the public API: the process's series plus Node's default ones (CPU, memory,
 * event-loop lag, GC, handles). Anything else is 404.
 */
export async function serveMetrics(port: number, host: string): Promise<RunningServer> {
  if (!defaultsCollected) {
    defaultsCollected = true;
    collectDefaultMetrics({ register: metricsRegistry });
  }
  const server = createServer(connectionServerOptions(defaultConnectionLimits), (req, res) => {
    if (req.method !== "GET" || req.url?.split("?")[0] !== "/metrics")
      return void res.writeHead(404, { "content-type": "text/plain" }).end("not found");
    metricsRegistry.metrics().then(
      (text) => res.writeHead(200, { "content-type": metricsRegistry.contentType }).end(text),
      () => res.writeHead(500, { "content-type": "text/plain" }).end("metrics unavailable"),
    );
  });
  // Its own scrapers' connections only, but an accept that fails must not end the process here either.
  limitConnections(server, defaultConnectionLimits);
  return listen(server, port, host, undefined, "METRICS_PORT");
}
