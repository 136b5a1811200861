import { createHash } from "node:crypto";
import { Counter, Registry } from "prom-client";

/** The metric types, for the apps' own series: prom-client is this package's dependency, not every app's. */
export { Counter, Gauge, Histogram } from "prom-client";

/**
 * The process's one registry: every series of every service hosted here,
 * served by its `/metrics` (metrics-server.ts). Series are defined once, at module scope, by the
 * module that counts them (apps/<service>/src/metrics.ts), so the all-in-one
 * process, which imports each module once, cannot register one twice, and
 * counting needs no dependency threaded through the wiring
 * (docs/decisions.md, "Metrics").
 */
export const metricsRegistry = new Registry();

/** Buckets of `organizationBucket`: enough to tell one busy organization from the rest, few enough to keep series bounded. */
export const organizationBuckets = 16;

/**
 * An organization's bucket, "0" to "f": the first hex digit of its id's
 * SHA-256, so an operator finds an organization's bucket with
 * `printf %s "$ORG_ID" | sha256sum | cut -c1`. Ids as labels would make a
 * series per tenant, without bound.
 */
export function organizationBucket(organizationId: string): string {
  return createHash("sha256").update(organizationId).digest("hex")[0]!;
}

/**
 * Requests refused by a limit, by which: `requests` (the gateway's rate
 * limit), `streams` (SSE streams open per credential), `queued_runs` (runs an
 * organization may have queued). Here, not in one app: the gateway and the
 * runs service both refuse, and share one process in the all-in-one.
 */
export const rateLimitRefusals = new Counter({
  name: "loom_rate_limit_refusals_total",
  help: "Requests refused by a limit (HTTP 429), by limit",
  labelNames: ["limit"] as const,
  registers: [metricsRegistry],
});
