import { randomBytes } from "node:crypto";
import { freePort, startProcess, stopProcess } from "@loom/testing/processes";
import { type Deployment, embedded, split } from "./deployments.ts";
import { percentile, printTable } from "./load.ts";
import { cpuMsOf, memoryOf } from "./process-stats.ts";
import { startSubscribers } from "./subscriber-threads.ts";

const now = () => performance.timeOrigin + performance.now();

/** Samples the processes' RSS every 10 ms; `growth()` is each one's peak (sampled, or VmHWM if it rose) above where it started. */
function watchMemory(pids: Record<string, number>) {
  const start = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, memoryOf(pid)]));
  const peak = Object.fromEntries(Object.entries(start).map(([name, m]) => [name, m.rss]));
  const sample = () => {
    for (const [name, pid] of Object.entries(pids)) peak[name] = Math.max(peak[name]!, memoryOf(pid).rss);
  };
  const timer = setInterval(sample, 10);
  return {
    growth(): Record<string, number> {
      clearInterval(timer);
      sample();
      return Object.fromEntries(
        Object.entries(pids).map(([name, pid]) => {
          const hwm = memoryOf(pid).hwm;
          const top = hwm > start[name]!.hwm ? Math.max(hwm, peak[name]!) : peak[name]!;
          return [name, top - start[name]!.rss];
        }),
      );
    },
  };
}

/** The floor: bench/bare-sse.ts, which answers an ended run's streams with one kept Buffer and nothing else of Loom. */
async function bareReplayer(): Promise<Deployment> {
  const port = await freePort();
  const proc = await startProcess("bench/bare-sse.ts", { PORT: String(port) }, `http://127.0.0.1:${port}/healthz`);
  return {
    name: "baseline: bare node:http",
    gatewayUrl: `http://127.0.0.1:${port}`,
    pids: { bare: proc.pid! },
    stop: () => stopProcess(proc),
  };
}

/** `GET /users` one after another until stopped: the latency an ordinary caller sees meanwhile. */
function poll(url: string, headers: Record<string, string>) {
  const latencies: number[] = [];
  let failed = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const at = now();
      const res = await fetch(`${url}/users`, { headers }).catch(() => undefined);
      if (res) await res.arrayBuffer();
      if (res?.status !== 200) failed += 1;
      latencies.push(now() - at);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      latencies.sort((a, b) => a - b);
      return {
        count: latencies.length,
        failed,
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        max: latencies.at(-1) ?? 0,
      };
    },
  };
}

/** A finished structure run of `events` events (the last one StructureRunCompleted), each carrying a `sent` time the subscribers count. */
async function finishedRun(d: Deployment, auth: Record<string, string>, events: number): Promise<string> {
  const runId = crypto.randomUUID();
  const event = (i: number) => ({
    type: i === events - 1 ? "StructureRunCompleted" : "BenchEvent",
    timestamp: 1795000000 + i,
    payload: { sent: now(), i, text: "x".repeat(64) },
  });
  for (let i = 0; i < events; i += 100) {
    const res = await fetch(`${d.gatewayUrl}/structure-runs/${runId}/events`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify(Array.from({ length: Math.min(100, events - i) }, (_, j) => event(i + j))),
    });
    if (res.status !== 202) throw new Error(`appending answered ${res.status}`);
  }
  return runId;
}

/** `streams` SSE streams opened at once on a finished run, from offset 0, while a client polls `GET /users`. */
async function crowd(
  d: Deployment,
  auth: Record<string, string>,
  runId: string,
  streams: number,
  events: number,
  threads: number,
) {
  const memory = watchMemory(d.pids);
  const cpuBefore = Object.fromEntries(Object.entries(d.pids).map(([name, pid]) => [name, cpuMsOf(pid)]));
  const poller = poll(d.gatewayUrl, auth);
  const readers = await startSubscribers(
    `${d.gatewayUrl}/structure-runs/${runId}/events/stream`,
    auth,
    streams,
    threads,
    0,
  );
  const result = await readers.results(60_000);
  const polled = await poller.stop();
  const cpu = Object.fromEntries(Object.entries(d.pids).map(([name, pid]) => [name, cpuMsOf(pid) - cpuBefore[name]!]));
  return {
    ...result,
    cpu,
    deliveredMs: result.endedAt - result.startedAt,
    exactlyOnce: result.ended === streams && result.delivered === streams * events,
    polled,
    growth: memory.growth(),
  };
}

/**
 * Issue 11: replays of a finished run. 2,000 streams open at once on a
 * finished run of 200 events (a first, cold crowd, then a second one), while
 * one client polls `GET /users`. Each subscriber checks its offsets run from
 * 0 one apart, and the counts say every stream got all 200 events.
 */
export async function benchReplays(options: { mongoUrl?: string; natsUrl?: string }): Promise<void> {
  const key = `loom_bench-${randomBytes(24).toString("base64url")}`;
  const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  const streams = Number(process.env.BENCH_REPLAY_STREAMS ?? 2_000);
  const events = Number(process.env.BENCH_REPLAY_EVENTS ?? 200);
  const threads = Number(process.env.BENCH_SUBSCRIBER_THREADS ?? 2);
  const rows: Array<Record<string, string | number>> = [];
  /** The baseline's "all delivered" per round, for the ratio column. */
  const floor = new Map<string, number>();

  // The baseline first: a bare node:http server answering the same streams with the same bytes.
  const deployments: Array<() => Promise<Deployment>> = [bareReplayer, () => embedded(key)];
  if (options.mongoUrl && options.natsUrl) deployments.push(() => split(key, options.mongoUrl!, options.natsUrl!));
  else console.log("(MongoDB + NATS rows skipped: MONGODB_URL and NATS_URL are both needed)");

  for (const open of deployments) {
    const d = await open();
    try {
      // A crowd on another run first: the process has just started, and a
      // server in service has run its code before. Its row is shown too.
      const rounds = [
        { round: "new process: a crowd on another run", runId: await finishedRun(d, auth, events) },
        { round: "first crowd (log not yet read)", runId: await finishedRun(d, auth, events) },
      ];
      rounds.push({ round: "second crowd (log kept)", runId: rounds[1]!.runId });
      for (const { round, runId } of rounds) {
        console.log(`replays on ${d.name}: ${round}, ${streams} streams`);
        const r = await crowd(d, auth, runId, streams, events, threads).catch((error: unknown) => {
          console.log(`replays: that row failed: ${(error as Error).message}`);
          return undefined;
        });
        const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);
        if (r && !floor.has(round)) floor.set(round, r.deliveredMs);
        rows.push(
          r
            ? {
                deployment: d.name,
                round,
                streams,
                "all delivered ms": Math.round(r.deliveredMs),
                "vs bare": floor.has(round) ? `${(r.deliveredMs / floor.get(round)!).toFixed(2)}×` : "",
                "each once": r.exactlyOnce ? "yes" : `NO (${r.ended} ended, ${r.delivered} events)`,
                "GET /users p50 ms": Math.round(r.polled.p50),
                "p99 ms": Math.round(r.polled.p99),
                "max ms": Math.round(r.polled.max),
                polls: r.polled.count,
                "RSS growth MB": Object.entries(r.growth)
                  .map(([name, bytes]) => `${name} ${mb(bytes)}`)
                  .join(", "),
                "server CPU ms": Object.entries(r.cpu)
                  .map(([name, ms]) => `${name} ${Math.round(ms)}`)
                  .join(", "),
              }
            : { deployment: d.name, round, streams, "all delivered ms": "failed" },
        );
      }
    } finally {
      await d.stop();
    }
  }
  printTable(
    `SSE replays: ${streams} streams opened at once on a finished run of ${events} events while a client polls GET /users (goal: all delivered < 2 s, p99 < 100 ms, RSS growth < 200 MB)`,
    rows,
  );
}
