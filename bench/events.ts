import { randomBytes } from "node:crypto";
import { freePort, startProcess, stopProcess } from "@loom/testing/processes";
import autocannon from "autocannon";
import { baselineRevision } from "./baseline-revision.ts";
import { type Deployment, embedded, embeddedBaseline, split } from "./deployments.ts";
import { percentile, printTable } from "./load.ts";
import { startSubscribers } from "./subscriber-threads.ts";

const now = () => performance.timeOrigin + performance.now();

const batchOf = (n: number) =>
  JSON.stringify(
    Array.from({ length: n }, (_, i) => ({
      type: "BenchEvent",
      timestamp: 1795000000 + i,
      payload: { i, text: "x".repeat(64) },
    })),
  );

/** Batches of 100 events from 10 clients, each to its own structure run. */
export async function ingest(d: Deployment, key: string, seconds: number) {
  const body = batchOf(100);
  const result = await autocannon({
    url: d.gatewayUrl,
    connections: 10,
    duration: seconds,
    requests: [
      {
        method: "POST",
        setupRequest: (req) => ({
          ...req,
          path: `/structure-runs/${crypto.randomUUID()}/events`,
          body,
          headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        }),
      },
    ],
  });
  return {
    eventsPerSecond: result.requests.average * 100,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
  };
}

/** `ingest` against a bare baseline server, `script`, started in a process of its own for the row. */
export async function ingestBare(script: string, key: string, seconds: number) {
  const port = await freePort();
  const gatewayUrl = `http://127.0.0.1:${port}`;
  const server = await startProcess(script, { PORT: String(port) }, `${gatewayUrl}/healthz`);
  try {
    return await ingest({ name: script, gatewayUrl, pids: {}, stop: async () => {} }, key, seconds);
  } finally {
    await stopProcess(server);
  }
}

/** `subscribers` SSE streams on one run while `rate` events/s are appended for `seconds`. */
export async function fanOut(
  d: Deployment,
  key: string,
  subscribers: number,
  rate: number,
  seconds: number,
  threads: number,
) {
  const runId = crypto.randomUUID();
  const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  const append = (body: unknown) =>
    fetch(`${d.gatewayUrl}/structure-runs/${runId}/events`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify(body),
    });
  await append({ type: "Open", timestamp: 0 });
  const readers = await startSubscribers(
    `${d.gatewayUrl}/structure-runs/${runId}/events/stream`,
    auth,
    subscribers,
    threads,
  );
  // 1/100 s ticks, each a batch of rate/100 events carrying its send time. A tick
  // does not wait for the previous batch's answer (the rate is the clock's), but
  // at most 8 batches are in flight: a store that cannot keep up lowers "sent ev/s".
  let sent = 0;
  const perTick = Math.max(1, Math.round(rate / 100));
  const until = Date.now() + seconds * 1000;
  const started = Date.now();
  const inFlight = new Set<Promise<void>>();
  for (let tick = 0; Date.now() < until; tick++) {
    while (inFlight.size >= 8) await Promise.race(inFlight);
    const at = now();
    const batch = Array.from({ length: perTick }, (_, i) => ({
      type: "BenchEvent",
      timestamp: at / 1000,
      payload: { sent: at, i },
    }));
    // A failed batch is not counted as sent; its events are not expected.
    const request: Promise<void> = append(batch)
      .then(async (res) => {
        await res.arrayBuffer();
        if (res.status === 202) sent += perTick;
      })
      .catch(() => {})
      .finally(() => inFlight.delete(request));
    inFlight.add(request);
    const wait = started + (tick + 1) * 10 - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  await Promise.all(inFlight);
  const appendSeconds = (Date.now() - started) / 1000;
  await append({ type: "StructureRunCompleted", timestamp: 1 });
  const { delivered, latencies } = await readers.results(60_000);
  latencies.sort();
  return {
    sent,
    sentPerSecond: sent / appendSeconds,
    expected: sent * subscribers,
    delivered,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

/** Issue 4: ingest throughput, and fan-out to many SSE subscribers while events are appended. */
export async function benchEvents(options: { seconds: number; mongoUrl?: string; natsUrl?: string }): Promise<void> {
  const key = `loom_bench-${randomBytes(24).toString("base64url")}`;
  const threads = Number(process.env.BENCH_SUBSCRIBER_THREADS ?? 2);
  const ladder = (process.env.BENCH_FANOUT ?? "100x100,1000x100,1000x1000")
    .split(",")
    .map((s) => s.split("x").map(Number) as [number, number]);
  const ingestRows: Array<Record<string, string | number>> = [];
  const fanRows: Array<Record<string, string | number>> = [];

  // Two baselines, each its own process: a handler that only parses the bodies, and one that also stores them
  // in SQLite as durably as Loom's embedded store (the floor of an ingest that keeps what it acknowledges).
  console.log("events: ingest baselines");
  const baseline = await ingestBare("bench/bare-koa.ts", key, options.seconds);
  const stored = await ingestBare("bench/bare-ingest.ts", key, options.seconds);
  const percentOf = (eventsPerSecond: number, of: number) => `${((100 * eventsPerSecond) / of).toFixed(1)}%`;
  const ingestRow = (target: string, r: Awaited<ReturnType<typeof ingest>>, vsStored: string) => ({
    target,
    "events/s": Math.round(r.eventsPerSecond),
    "p50 ms": r.p50,
    "p99 ms": r.p99,
    "vs parse-only baseline": percentOf(r.eventsPerSecond, baseline.eventsPerSecond),
    "Loom / store-and-sync baseline": vsStored,
    "non-2xx": r.non2xx,
  });
  ingestRows.push(
    ingestRow("bare Koa handler parsing the same bodies (baseline)", baseline, "-"),
    ingestRow("bare node:http handler storing them in SQLite (store-and-sync baseline)", stored, "-"),
  );

  const baselineRev = baselineRevision();
  const deployments: Array<() => Promise<Deployment>> = [() => embedded(key)];
  if (baselineRev) deployments.unshift(() => embeddedBaseline(key, baselineRev));
  if (options.mongoUrl && options.natsUrl) deployments.push(() => split(key, options.mongoUrl!, options.natsUrl!));
  else console.log("(MongoDB + NATS rows skipped: MONGODB_URL and NATS_URL are both needed)");

  /** The fan-out ladder on one deployment, a row per step; `bareP99` is the bare broadcaster's p99 per step, for the ratio. */
  const fanOutLadder = async (d: Deployment, bareP99?: Map<string, number>) => {
    const p99s = new Map<string, number>();
    for (const [subscribers, rate] of ladder) {
      console.log(`events: fan-out on ${d.name}: ${subscribers} subscribers, ${rate} events/s`);
      // A row that cannot complete is a result too: reported, not fatal to the rest.
      const f = await fanOut(d, key, subscribers, rate, options.seconds, threads).catch((error: unknown) => {
        console.log(`events: that row failed: ${(error as Error).message}`);
        return undefined;
      });
      if (!f) {
        fanRows.push({
          deployment: d.name,
          subscribers,
          "asked ev/s": rate,
          "sent ev/s": "failed",
          "sent × subs": "-",
          delivered: "-",
          lost: "-",
          "p50 ms": "-",
          "p99 ms": "-",
          "p99 vs bare": "-",
        });
        continue;
      }
      console.log(`events: delivered ${f.delivered} of ${f.expected}, p99 ${Math.round(f.p99)} ms`);
      p99s.set(`${subscribers}x${rate}`, f.p99);
      const bare = bareP99?.get(`${subscribers}x${rate}`);
      fanRows.push({
        deployment: d.name,
        subscribers,
        "asked ev/s": rate,
        "sent ev/s": Math.round(f.sentPerSecond),
        "sent × subs": f.expected,
        delivered: f.delivered,
        lost: f.expected - f.delivered,
        "p50 ms": Math.round(f.p50),
        "p99 ms": Math.round(f.p99),
        "p99 vs bare": bareP99 && bare ? `${(f.p99 / bare).toFixed(2)}×` : "-",
      });
    }
    return p99s;
  };

  // The baseline, in the same run: a bare node:http broadcaster, same frames, rate and subscriber
  // threads; once writing each batch at once, once batching writes as the gateway does (40 ms at
  // 1,000 subscribers). The ratio is against the better of the two.
  const bareP99 = new Map<string, number>();
  for (const [name, interval] of [
    ["bare node:http broadcaster, a write per batch", "0"],
    ["bare node:http broadcaster, a write per 40 ms", "40"],
  ] as const) {
    const port = await freePort();
    const proc = await startProcess(
      "bench/bare-sse.ts",
      { PORT: String(port), WRITE_INTERVAL_MS: interval },
      `http://127.0.0.1:${port}/healthz`,
    );
    const p99s = await fanOutLadder({ name, gatewayUrl: `http://127.0.0.1:${port}`, pids: {}, stop: async () => {} });
    await stopProcess(proc);
    for (const [step, p99] of p99s) bareP99.set(step, Math.min(p99, bareP99.get(step) ?? Infinity));
  }

  for (const open of deployments) {
    const d = await open();
    console.log(`events: ingest on ${d.name}`);
    const r = await ingest(d, key, options.seconds);
    ingestRows.push(ingestRow(d.name, r, percentOf(r.eventsPerSecond, stored.eventsPerSecond)));
    await fanOutLadder(d, bareP99);
    await d.stop();
  }
  printTable(`Event ingest: batches of 100 from 10 clients, ${options.seconds} s per row`, ingestRows);
  printTable(
    `SSE fan-out on one structure run, ${options.seconds} s of appends per row (goal at 1,000 × 1,000/s: p99 ≤ 2× the bare broadcaster's, zero lost)`,
    fanRows,
  );
}
