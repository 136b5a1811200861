import { randomBytes } from "node:crypto";
import { apiClient } from "@loom/testing/http";
import { freePort, startProcess, stopProcess } from "@loom/testing/processes";
import { openSse } from "@loom/testing/sse";
import { printTable } from "./load.ts";
import { driveRuns, runEnv, runsOutcome } from "./runs-throughput.ts";

type Drive = ReturnType<typeof runsOutcome>;

/**
 * `clients` loops: create a run, then follow its events over SSE until the
 * server closes the stream (after the run's terminal event); no new runs after
 * `seconds`. A run counts when its stream ended with its terminal event.
 */
export async function driveFollowedRuns(
  baseUrl: string,
  key: string,
  assistantId: string,
  clients: number,
  seconds: number,
): Promise<Drive> {
  const api = apiClient(baseUrl, key);
  const latencies: number[] = [];
  let failed = 0;
  let unfinished = 0;
  const begin = performance.now();
  const until = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (Date.now() < until) {
        const started = performance.now();
        try {
          const run = (await api.post(`/assistants/${assistantId}/runs`, { input: "benchmark" })).body;
          const stream = await openSse(`${baseUrl}/assistant-runs/${run.assistant_run_id}/events/stream`, {
            authorization: `Bearer ${key}`,
          });
          const timer = setTimeout(() => stream.close(), 60_000);
          await stream.ended;
          clearTimeout(timer);
          const last = stream.events.at(-1);
          const status = last
            ? (JSON.parse(last.data) as { payload?: { status?: string } }).payload?.status
            : undefined;
          if (status === "SUCCEEDED") latencies.push(performance.now() - started);
          else if (status) failed++;
          else unfinished++;
        } catch {
          failed++;
        }
      }
    }),
  );
  return runsOutcome(latencies, begin, failed, unfinished);
}

/**
 * Issue 37: runs followed over SSE against the same runs observed by polling
 * (every 20 ms), on one all-in-one process with the same caps and the same
 * HTTP client (undici's fetch), at 10 and 100 clients; rounds interleave the
 * two ways so the machine's drift hits both. Goal: followed ≥ 80% of polled.
 */
export async function benchFollowedRuns(options: { seconds: number; rounds: number }): Promise<void> {
  const key = `loom_bench-${randomBytes(24).toString("base64url")}`;
  const port = await freePort();
  const loom = await startProcess(
    "apps/loom/src/main.ts",
    { PORT: String(port), BOOTSTRAP_API_KEY: key, ...runEnv },
    `http://127.0.0.1:${port}/healthz`,
  );
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    const api = apiClient(baseUrl, key);
    const assistantId = (await api.post("/assistants", { name: "bench-followed" })).body.assistant_id as string;
    const ways = {
      polled: (clients: number) => driveRuns(api, assistantId, clients, options.seconds),
      "followed over SSE": (clients: number) => driveFollowedRuns(baseUrl, key, assistantId, clients, options.seconds),
    };
    // Warm-up, not counted.
    for (const drive of Object.values(ways)) await drive(100);
    const measured = new Map<string, Drive[]>();
    for (let round = 0; round < options.rounds; round++)
      for (const clients of [10, 100]) {
        const order = Object.entries(ways);
        for (const [way, drive] of round % 2 === 0 ? order : order.reverse()) {
          const slot = `${way}/${clients}`;
          measured.set(slot, [...(measured.get(slot) ?? []), await drive(clients)]);
        }
      }
    const mean = (ds: Drive[], field: "runsPerSecond" | "p50" | "p99") =>
      ds.reduce((sum, d) => sum + d[field], 0) / ds.length;
    const rows: Array<Record<string, string | number>> = [];
    for (const clients of [10, 100])
      for (const way of Object.keys(ways)) {
        const ds = measured.get(`${way}/${clients}`)!;
        const polled = measured.get(`polled/${clients}`)!;
        rows.push({
          way,
          clients,
          "runs/s": Math.round(mean(ds, "runsPerSecond") * 10) / 10,
          "p50 ms": Math.round(mean(ds, "p50")),
          "p99 ms": Math.round(mean(ds, "p99")),
          "vs polled": `${((100 * mean(ds, "runsPerSecond")) / mean(polled, "runsPerSecond")).toFixed(1)}% (rounds ${ds
            .map((d, i) => ((100 * d.runsPerSecond) / polled[i]!.runsPerSecond).toFixed(0))
            .join("/")})`,
          failed: ds.reduce((sum, d) => sum + d.failed, 0),
          unfinished: ds.reduce((sum, d) => sum + d.unfinished, 0),
        });
      }
    printTable(
      `Runs followed over SSE vs polled (every 20 ms): all-in-one, SQLite file, same caps, ${options.seconds} s per row, mean of ${options.rounds} interleaved rounds (goal: followed ≥ 80% of polled)`,
      rows,
    );
    const failed = rows.reduce((n, r) => n + Number(r.failed), 0);
    if (failed > 0) throw new Error(`${failed} runs did not succeed`);
  } finally {
    await stopProcess(loom);
  }
}
