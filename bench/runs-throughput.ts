import { randomBytes } from "node:crypto";
import { isTerminal } from "@loom/contracts/run-lifecycle";
import { connectMongo } from "@loom/store/mongo";
import { startSplitStack } from "@loom/test-stacks/split-stack";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { freePort, startProcess, stopProcess } from "@loom/testing/processes";
import { dropDatabase, freshDatabaseName } from "@loom/testing/servers";
import { baselineRevision } from "./baseline-revision.ts";
import { benchDatabases } from "./deployments.ts";
import { percentile, printTable } from "./load.ts";

const pollMs = 20;
// Caps high enough that the figure measures the engine, not the limits.
export const runEnv = { RUN_WORKER_CONCURRENCY: "100", RUN_MAX_PER_ORGANIZATION: "100", RUN_POLL_MS: "100" };

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
  /** This revision's all-in-one against the baseline revision's, same clients (issue 15: ≥ 80%). */
  "vs in-memory"?: string;
}

/**
 * `clients` loops: create a run (`body` of the client's index), poll until it ends; no new runs after
 * `seconds`. The rate is over the time until the last run ended (a backlog
 * counts against it); a run still going 60 s after the window is unfinished.
 */
export async function driveRuns(
  api: ApiClient,
  assistantId: string,
  clients: number,
  seconds: number,
  body: (client: number) => Record<string, unknown> = () => ({ input: "benchmark" }),
) {
  const latencies: number[] = [];
  let failed = 0;
  let unfinished = 0;
  const begin = performance.now();
  const until = Date.now() + seconds * 1000;
  const giveUp = until + 60_000;
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      while (Date.now() < until) {
        const started = performance.now();
        try {
          let run = (await api.post(`/assistants/${assistantId}/runs`, body(client))).body;
          while (!isTerminal(run.status) && Date.now() < giveUp) {
            await new Promise((r) => setTimeout(r, pollMs));
            run = (await api.get(`/assistant-runs/${run.assistant_run_id}`)).body;
          }
          if (run.status === "SUCCEEDED") latencies.push(performance.now() - started);
          else if (isTerminal(run.status)) failed++;
          else unfinished++;
        } catch {
          failed++; // the request itself failed (e.g. no answer within undici's 300 s)
        }
      }
    }),
  );
  return runsOutcome(latencies, begin, failed, unfinished);
}

/** A drive's outcome: succeeded runs a second since `begin` (a `performance.now()`), their latency percentiles, and the rest counted. */
export function runsOutcome(latencies: number[], begin: number, failed: number, unfinished: number) {
  const elapsed = (performance.now() - begin) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    runsPerSecond: latencies.length / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    failed,
    unfinished,
  };
}

/** `count` runs through the API, `clients` at a time, each waited for (the queued cap stays out of the way). */
export async function seedThroughApi(api: ApiClient, assistantId: string, count: number, clients = 100) {
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next++ < count) {
        let run = (await api.post(`/assistants/${assistantId}/runs`, { input: "history" })).body;
        if (!run.assistant_run_id) throw new Error(`seeding: ${JSON.stringify(run)}`);
        while (!isTerminal(run.status)) {
          await new Promise((r) => setTimeout(r, 50));
          run = (await api.get(`/assistant-runs/${run.assistant_run_id}`)).body;
        }
      }
    }),
  );
}

/**
 * `count` finished runs written straight into the runs database, shaped as
 * the API leaves them (SUCCEEDED, output, completedAt, and their claim
 * records), copied from one real run: through the API the split stack on
 * FerretDB seeds at a few dozen runs a second. Their events are not seeded.
 */
async function seedRunDocuments(api: ApiClient, assistantId: string, mongoUrl: string, runsDb: string, count: number) {
  const model = (await api.post(`/assistants/${assistantId}/runs`, { input: "history" })).body
    .assistant_run_id as string;
  let done: { status: string } = { status: "QUEUED" };
  while (!isTerminal(done.status)) {
    await new Promise((r) => setTimeout(r, 50));
    done = (await api.get(`/assistant-runs/${model}`)).body;
  }
  const handle = await connectMongo(mongoUrl, runsDb);
  try {
    const template = await handle.db.collection<{ _id: string }>("runs").findOne({ _id: model });
    if (!template) throw new Error("seeding: the model run is not in the runs database");
    const start = Date.now() - count * 1000;
    for (let i = 0; i < count; i += 1000) {
      const batch = Array.from({ length: Math.min(1000, count - i) }, (_, j) => {
        const at = new Date(start + (i + j) * 1000);
        return {
          ...template,
          _id: crypto.randomUUID(),
          createdAt: at,
          updatedAt: new Date(at.getTime() + 50),
          completedAt: new Date(at.getTime() + 50),
        };
      });
      await handle.db.collection<{ _id: string }>("runs").insertMany(batch);
      await handle.db
        .collection<{ _id: string }>("run_claims")
        .insertMany(batch.map((r) => ({ _id: r._id, worker: "seed", at: r.createdAt })));
    }
  } finally {
    await handle.close();
  }
}

/** One row at `clients`, as `measure` makes them. */
async function row(
  deployment: string,
  api: ApiClient,
  assistantId: string,
  clients: number,
  seconds: number,
): Promise<Row> {
  const baseline = await driveBaseline(api, assistantId, clients, Math.max(2, seconds / 2));
  const r = await driveRuns(api, assistantId, clients, seconds);
  return {
    deployment,
    clients,
    "runs/s": Math.round(r.runsPerSecond * 10) / 10,
    "p50 ms": Math.round(r.p50),
    "p99 ms": Math.round(r.p99),
    "baseline req/s": Math.round(baseline),
    "runs vs baseline": `${((100 * r.runsPerSecond) / baseline).toFixed(1)}%`,
    failed: r.failed,
    unfinished: r.unfinished,
  };
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

/** The 1/10/100-client rows on an all-in-one process started from `main` (this revision's, or the baseline's). */
async function measureAllInOne(main: string, deployment: string, key: string, seconds: number): Promise<Row[]> {
  const port = await freePort();
  const loom = await startProcess(
    main,
    { PORT: String(port), BOOTSTRAP_API_KEY: key, ...runEnv },
    `http://127.0.0.1:${port}/healthz`,
  );
  try {
    return await measure(deployment, `http://127.0.0.1:${port}`, key, seconds);
  } finally {
    await stopProcess(loom);
  }
}

/**
 * The ladder on this revision's all-in-one against `baselineMain`'s, both
 * processes up at once and their rows interleaved: per round, each client
 * count on one then the other (which goes first alternates), after a warm-up
 * of each. The machine's pace drifts by more than the difference measured
 * within minutes, so rows taken one deployment after the other compared the
 * drift. Each row is the mean of its rounds; "vs in-memory" is the ratio of
 * the means, and the per-round ratios are printed beside them.
 */
async function measureAgainst(
  baselineMain: string,
  baselineName: string,
  key: string,
  seconds: number,
  rounds: number,
): Promise<Row[]> {
  const started = [] as Array<{
    name: string;
    loom: Awaited<ReturnType<typeof startProcess>>;
    api: ApiClient;
    assistantId: string;
  }>;
  try {
    for (const [main, name] of [
      [baselineMain, baselineName],
      ["apps/loom/src/main.ts", "all-in-one, SQLite file"],
    ] as const) {
      const port = await freePort();
      const loom = await startProcess(
        main,
        { PORT: String(port), BOOTSTRAP_API_KEY: key, ...runEnv },
        `http://127.0.0.1:${port}/healthz`,
      );
      const api = apiClient(`http://127.0.0.1:${port}`, key);
      started.push({
        name,
        loom,
        api,
        assistantId: (await api.post("/assistants", { name: "bench" })).body.assistant_id,
      });
    }
    for (const d of started) await driveRuns(d.api, d.assistantId, 100, seconds); // warm-up, not counted
    const measured = new Map<string, Row[]>();
    for (let round = 0; round < rounds; round++) {
      for (const clients of [1, 10, 100]) {
        for (const d of round % 2 === 0 ? started : [...started].reverse()) {
          const slot = `${d.name}/${clients}`;
          measured.set(slot, [
            ...(measured.get(slot) ?? []),
            await row(d.name, d.api, d.assistantId, clients, seconds),
          ]);
        }
      }
    }
    const mean = (rs: Row[], field: "runs/s" | "p50 ms" | "p99 ms" | "baseline req/s") =>
      rs.reduce((sum, r) => sum + r[field], 0) / rs.length;
    const rows: Row[] = [];
    for (const d of started) {
      for (const clients of [1, 10, 100]) {
        const rs = measured.get(`${d.name}/${clients}`)!;
        const runsPerSecond = mean(rs, "runs/s");
        const baselineReqs = mean(rs, "baseline req/s");
        const row: Row = {
          deployment: `${d.name}, mean of ${rounds}`,
          clients,
          "runs/s": Math.round(runsPerSecond * 10) / 10,
          "p50 ms": Math.round(mean(rs, "p50 ms")),
          "p99 ms": Math.round(mean(rs, "p99 ms")),
          "baseline req/s": Math.round(baselineReqs),
          "runs vs baseline": `${((100 * runsPerSecond) / baselineReqs).toFixed(1)}%`,
          failed: rs.reduce((sum, r) => sum + r.failed, 0),
          unfinished: rs.reduce((sum, r) => sum + r.unfinished, 0),
        };
        if (d !== started[0]) {
          const before = measured.get(`${started[0]!.name}/${clients}`)!;
          const perRound = rs.map((r, i) => `${((100 * r["runs/s"]) / before[i]!["runs/s"]).toFixed(0)}`).join("/");
          row["vs in-memory"] = `${((100 * runsPerSecond) / mean(before, "runs/s")).toFixed(1)}% (rounds ${perRound})`;
        }
        rows.push(row);
      }
    }
    return rows;
  } finally {
    for (const d of started) await stopProcess(d.loom);
  }
}

async function measure(deployment: string, gatewayUrl: string, key: string, seconds: number): Promise<Row[]> {
  const api = apiClient(gatewayUrl, key);
  const assistantId = (await api.post("/assistants", { name: "bench" })).body.assistant_id;
  const rows: Row[] = [];
  for (const clients of [1, 10, 100]) rows.push(await row(deployment, api, assistantId, clients, seconds));
  return rows;
}

const historyRuns = 10_000;

/**
 * Issue 11: 100 clients with the default caps on a fresh process, then again
 * once `historyRuns` finished runs are stored; the queue must not slow with history.
 */
async function measureHistory(
  deployment: string,
  gatewayUrl: string,
  key: string,
  seconds: number,
  seed: (api: ApiClient, assistantId: string) => Promise<void>,
) {
  const api = apiClient(gatewayUrl, key);
  const assistantId = (await api.post("/assistants", { name: "bench-history" })).body.assistant_id;
  const fresh = await row(`${deployment}, fresh`, api, assistantId, 100, seconds);
  const started = performance.now();
  await seed(api, assistantId);
  console.log(`(${deployment}: ${historyRuns} runs seeded in ${((performance.now() - started) / 1000).toFixed(0)} s)`);
  const after = await row(
    `${deployment}, ${historyRuns.toLocaleString("en")} runs stored`,
    api,
    assistantId,
    100,
    seconds,
  );
  return { fresh, after };
}

interface HistoryRow extends Row {
  "vs fresh": string;
}

const historyTitle = (seconds: number) =>
  `Runs with history: 100 clients, default caps (RUN_WORKER_CONCURRENCY 16, RUN_MAX_PER_ORGANIZATION 8), ${seconds} s per row, fresh and with ${historyRuns.toLocaleString("en")} finished runs stored`;

/** The pair of rows with the ratio, printed at once (a later deployment failing does not lose them). */
function historyRows(pair: { fresh: Row; after: Row }, seconds: number): HistoryRow[] {
  const rows = [
    { ...pair.fresh, "vs fresh": "" },
    { ...pair.after, "vs fresh": `${((100 * pair.after["runs/s"]) / pair.fresh["runs/s"]).toFixed(0)}%` },
  ];
  printTable(historyTitle(seconds), rows as unknown as Array<Record<string, string | number>>);
  return rows;
}

/**
 * Issue 3: runs/second end to end (create → terminal, observed by polling
 * GET every 20 ms) with loom:echo at 1, 10 and 100 concurrent clients, on the
 * embedded process and on separate processes with MongoDB + NATS.
 */
export async function benchRunsThroughput(options: {
  seconds: number;
  rounds: number;
  mongoUrl?: string;
  natsUrl?: string;
}): Promise<void> {
  const key = `loom_bench-${randomBytes(24).toString("base64url")}`;
  const rows: Row[] = [];

  const history: HistoryRow[] = [];
  // "ladder": only the 1/10/100-client rows; "history": only the history rows; "history-mongo": only the MongoDB history rows
  const only = process.env.BENCH_RUNS_ONLY;

  if (only === undefined || only === "ladder") {
    // Issue 15: the durable store within 20% of the in-memory stores it replaced, in this run.
    const baseline = baselineRevision();
    if (baseline)
      rows.push(
        ...(await measureAgainst(
          baseline.main,
          `all-in-one at ${baseline.label}`,
          key,
          options.seconds,
          options.rounds,
        )),
      );
    else
      rows.push(...(await measureAllInOne("apps/loom/src/main.ts", "all-in-one, SQLite file", key, options.seconds)));
  }
  if (only !== "history-mongo" && only !== "ladder") {
    // The default caps: no RUN_* settings.
    const port = await freePort();
    const loom = await startProcess(
      "apps/loom/src/main.ts",
      { PORT: String(port), BOOTSTRAP_API_KEY: key },
      `http://127.0.0.1:${port}/healthz`,
    );
    history.push(
      ...historyRows(
        await measureHistory("all-in-one, SQLite file", `http://127.0.0.1:${port}`, key, options.seconds, (api, id) =>
          seedThroughApi(api, id, historyRuns),
        ),
        options.seconds,
      ),
    );
    await stopProcess(loom);
  }

  if (options.mongoUrl && options.natsUrl && only !== "ladder") {
    const db = freshDatabaseName("loom_bench");
    const databases = benchDatabases(db);
    const perService = {
      ...databases,
      identity: { ...databases.identity, BOOTSTRAP_API_KEY: key },
      runs: { ...databases.runs, ...runEnv },
    };
    if (only === undefined) {
      const stack = await startSplitStack({ MONGODB_URL: options.mongoUrl, NATS_URL: options.natsUrl }, perService);
      rows.push(...(await measure("5 processes, MongoDB + NATS", stack.gatewayUrl, key, options.seconds)));
      await stack.stop();
      for (const { MONGODB_DB } of Object.values(databases)) await dropDatabase(options.mongoUrl, MONGODB_DB);
    }
    const historyDb = freshDatabaseName("loom_bench");
    const historyDatabases = benchDatabases(historyDb);
    const defaults = { ...historyDatabases, identity: { ...historyDatabases.identity, BOOTSTRAP_API_KEY: key } };
    const stack = await startSplitStack({ MONGODB_URL: options.mongoUrl, NATS_URL: options.natsUrl }, defaults);
    const mongoUrl = options.mongoUrl;
    history.push(
      ...historyRows(
        await measureHistory("5 processes, MongoDB + NATS", stack.gatewayUrl, key, options.seconds, (api, id) =>
          seedRunDocuments(api, id, mongoUrl, historyDatabases.runs.MONGODB_DB, historyRuns),
        ),
        options.seconds,
      ),
    );
    await stack.stop();
    for (const { MONGODB_DB } of Object.values(historyDatabases)) await dropDatabase(options.mongoUrl, MONGODB_DB);
  } else {
    console.log("(MongoDB + NATS rows skipped: MONGODB_URL and NATS_URL are both needed)");
  }

  if (rows.length)
    printTable(
      `Runs end to end with loom:echo, ${options.seconds} s per row (create → terminal, polling every ${pollMs} ms)`,
      rows as unknown as Array<Record<string, string | number>>,
    );
  printTable(historyTitle(options.seconds), history as unknown as Array<Record<string, string | number>>);
  const failed = [...rows, ...history].reduce((n, r) => n + r.failed, 0);
  if (failed > 0) throw new Error(`${failed} runs did not succeed`);
  if (options.mongoUrl) {
    console.log(
      "(The MongoDB rows ran on the test server given by MONGODB_URL; FerretDB's SQLite backend scans for filtered queries, see docs/benchmarks.md.)",
    );
  }
}
