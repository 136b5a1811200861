import { randomBytes } from "node:crypto";
import { apiClient, type ApiClient } from "@loom/testing/http";
import { dropDatabase, freshDatabaseName } from "@loom/testing/servers";
import { printTable } from "./load.ts";
import { freePort, startProcess, stopProcess } from "@loom/testing/processes";
import { startSplitStack } from "@loom/testing/split-stack";

const terminal = new Set(["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"]);
const pollMs = 20;
// Caps high enough that the figure measures the engine, not the limits.
const runEnv = { RUN_WORKER_CONCURRENCY: "100", RUN_MAX_PER_ORGANIZATION: "100", RUN_POLL_MS: "100" };

interface Row {
  deployment: string;
  clients: number;
  "runs/s": number;
  "p50 ms": number;
  "p99 ms": number;
  "baseline req/s": number;
  "runs vs baseline": string;
  failed: number;
  unfinished: number;
}

const percentile = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : 0);

/**
 * `clients` loops: create a run, poll until it ends; no new runs after
 * `seconds`. The rate is over the time until the last run ended (a backlog
 * counts against it); a run still going 60 s after the window is unfinished.
 */
async function driveRuns(api: ApiClient, assistantId: string, clients: number, seconds: number) {
  const latencies: number[] = [];
  let failed = 0;
  let unfinished = 0;
  const begin = performance.now();
  const until = Date.now() + seconds * 1000;
  const giveUp = until + 60_000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (Date.now() < until) {
        const started = performance.now();
        let run = (await api.post(`/assistants/${assistantId}/runs`, { input: "benchmark" })).body;
        while (!terminal.has(run.status) && Date.now() < giveUp) {
          await new Promise((r) => setTimeout(r, pollMs));
          run = (await api.get(`/assistant-runs/${run.assistant_run_id}`)).body;
        }
        if (run.status === "SUCCEEDED") latencies.push(performance.now() - started);
        else if (terminal.has(run.status)) failed++;
        else unfinished++;
      }
    }),
  );
  const elapsed = (performance.now() - begin) / 1000;
  latencies.sort((a, b) => a - b);
  return { runsPerSecond: latencies.length / elapsed, p50: percentile(latencies, 50), p99: percentile(latencies, 99), failed, unfinished };
}

/** The same client loop doing one plain read per iteration: the request capacity without runs. */
async function driveBaseline(api: ApiClient, assistantId: string, clients: number, seconds: number) {
  let done = 0;
  const until = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (Date.now() < until) {
        await api.get(`/assistants/${assistantId}`);
        done++;
      }
    }),
  );
  return done / seconds;
}

async function measure(deployment: string, gatewayUrl: string, key: string, seconds: number): Promise<Row[]> {
  const api = apiClient(gatewayUrl, key);
  const assistantId = (await api.post("/assistants", { name: "bench" })).body.assistant_id;
  const rows: Row[] = [];
  for (const clients of [1, 10, 100]) {
    const baseline = await driveBaseline(api, assistantId, clients, Math.max(2, seconds / 2));
    const r = await driveRuns(api, assistantId, clients, seconds);
    rows.push({
      deployment,
      clients,
      "runs/s": Math.round(r.runsPerSecond * 10) / 10,
      "p50 ms": Math.round(r.p50),
      "p99 ms": Math.round(r.p99),
      "baseline req/s": Math.round(baseline),
      "runs vs baseline": `${((100 * r.runsPerSecond) / baseline).toFixed(1)}%`,
      failed: r.failed,
      unfinished: r.unfinished,
    });
  }
  return rows;
}

/**
 * Issue 3: runs/second end to end (create → terminal, observed by polling
 * GET every 20 ms) with loom:echo at 1, 10 and 100 concurrent clients, on the
 * embedded process and on separate processes with MongoDB + NATS.
 */
export async function benchRunsThroughput(options: { seconds: number; mongoUrl?: string; natsUrl?: string }): Promise<void> {
  const key = `loom_bench-${randomBytes(24).toString("base64url")}`;
  const rows: Row[] = [];

  const port = await freePort();
  const loom = await startProcess("apps/loom/src/main.ts", { PORT: String(port), BOOTSTRAP_API_KEY: key, ...runEnv }, `http://127.0.0.1:${port}/healthz`);
  rows.push(...(await measure("all-in-one, in-memory", `http://127.0.0.1:${port}`, key, options.seconds)));
  await stopProcess(loom);

  if (options.mongoUrl && options.natsUrl) {
    const db = freshDatabaseName("loom_bench");
    const perService: Record<string, Record<string, string>> = {
      identity: { MONGODB_DB: `${db}_identity`, BOOTSTRAP_API_KEY: key },
      assistants: { MONGODB_DB: `${db}_assistants` },
      events: { MONGODB_DB: `${db}_events` },
      runs: { MONGODB_DB: `${db}_runs`, ...runEnv },
    };
    const stack = await startSplitStack({ MONGODB_URL: options.mongoUrl, NATS_URL: options.natsUrl }, perService);
    rows.push(...(await measure("5 processes, MongoDB + NATS", stack.gatewayUrl, key, options.seconds)));
    await stack.stop();
    for (const s of ["identity", "assistants", "events", "runs"]) await dropDatabase(options.mongoUrl, `${db}_${s}`);
  } else {
    console.log("(MongoDB + NATS rows skipped: MONGODB_URL and NATS_URL are both needed)");
  }

  printTable(`Runs end to end with loom:echo, ${options.seconds} s per row (create → terminal, polling every ${pollMs} ms)`, rows as unknown as Array<Record<string, string | number>>);
  const failed = rows.reduce((n, r) => n + r.failed, 0);
  if (failed > 0) throw new Error(`${failed} runs did not succeed`);
  if (options.mongoUrl) {
    console.log("(The MongoDB rows ran on the test server given by MONGODB_URL; FerretDB's SQLite backend scans for filtered queries, see docs/benchmarks.md.)");
  }
}
