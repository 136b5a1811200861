import {
  Counter,
  Gauge,
  Histogram,
  metricsRegistry,
  organizationBucket,
  organizationBuckets,
} from "@loom/telemetry/metrics";
import type { RunQueue } from "./store/run-queue.ts";
import type { RunStatus } from "./store/run-records.ts";

/** The runs service's series (infra/README.md, "Metrics and alerts"), in the process's one registry. */
const transitions = new Counter({
  name: "loom_runs_transitions_total",
  help: "Run state transitions made by this replica, by from and to status (from NONE: a run created)",
  labelNames: ["from", "to"] as const,
  registers: [metricsRegistry],
});

/** Counts one transition this replica made; `NONE` is where a new run comes from. */
export function countTransition(from: RunStatus | "NONE", to: RunStatus): void {
  transitions.labels(from, to).inc();
}

export const queueWait = new Histogram({
  name: "loom_runs_queue_wait_seconds",
  help: "How long runs waited queued before a worker took them (QUEUED to STARTING)",
  buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
  registers: [metricsRegistry],
});

const executing = new Gauge({
  name: "loom_runs_executing",
  help: "Runs this replica's worker holds (STARTING or RUNNING), by organization bucket (0-f: first hex digit of the SHA-256 of the organization id)",
  labelNames: ["organization_bucket"] as const,
  registers: [metricsRegistry],
});
// Every bucket from the start, at 0: a quiet bucket is a series, not a gap.
for (let i = 0; i < organizationBuckets; i++) executing.labels(i.toString(16)).set(0);

/** Counts a run as executing until the returned function is called. */
export function trackExecuting(organizationId: string): () => void {
  const bucket = executing.labels(organizationBucket(organizationId));
  bucket.inc();
  return () => bucket.dec();
}

/**
 * Queue entries a scrape reads at most: the depth is exact up to here and
 * reads as this beyond (an alert fires far below it), so a flooded queue
 * costs a scrape no more than this.
 */
export const queueDepthCap = 10_000;

/** The queue as the store holds it (every replica reports the same one: aggregate with max, not sum). */
let queueSource: RunQueue | undefined;
let reading: Promise<{ depth: number; oldestAgeSeconds: number } | undefined> | undefined;

/** One read of the queue serves both gauges of a scrape (prom-client collects them concurrently). */
function readQueue(): Promise<{ depth: number; oldestAgeSeconds: number } | undefined> {
  const store = queueSource;
  if (!store) return Promise.resolve(undefined);
  reading ??= store
    .queueCandidates([], [], queueDepthCap)
    .then(
      (entries) => ({
        depth: entries.length,
        oldestAgeSeconds: entries[0] ? Math.max(0, (Date.now() - entries[0].createdAt.getTime()) / 1000) : 0,
      }),
      () => undefined, // a store that does not answer leaves the last values (its readiness says the rest)
    )
    .finally(() => (reading = undefined));
  return reading;
}

new Gauge({
  name: "loom_runs_queue_depth",
  help: `Runs queued, waiting for a worker (store-wide; counted up to ${queueDepthCap})`,
  registers: [metricsRegistry],
  async collect() {
    const queue = await readQueue();
    if (queue) this.set(queue.depth);
  },
});

new Gauge({
  name: "loom_runs_queue_oldest_age_seconds",
  help: "How long the oldest queued run has waited (store-wide; 0 when the queue is empty)",
  registers: [metricsRegistry],
  async collect() {
    const queue = await readQueue();
    if (queue) this.set(queue.oldestAgeSeconds);
  },
});

/** Makes the queue gauges read this store; the returned function lets go of it (the service's close). */
export function measureQueue(store: RunQueue): () => void {
  queueSource = store;
  return () => {
    if (queueSource === store) queueSource = undefined;
  };
}
