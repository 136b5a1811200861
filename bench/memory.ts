import { randomBytes } from "node:crypto";
import { apiClient } from "@loom/testing/http";
import { freePort, startProcess, stopProcess } from "@loom/testing/processes";
import { baselineRevision } from "./baseline-revision.ts";
import { printTable } from "./load.ts";
import { memoryOf } from "./process-stats.ts";
import { seedThroughApi } from "./runs-throughput.ts";

const mib = (bytes: number) => Math.round(bytes / 1024 / 1024);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Issue 15, "memory follows data, not history": the all-in-one process's RSS
 * when idle, right after `runs` loom:echo runs (each with its events) went
 * through it, and over the next 60 s. Goal: back within 50 MB of idle within
 * 60 s. The baseline revision (in-memory stores) is shown beside it.
 */
export async function benchMemory(options: { runs: number; settleSeconds: number }): Promise<void> {
  const rows: Array<Record<string, string | number>> = [];
  const baseline = baselineRevision();
  const targets = [
    ...(baseline ? [{ main: baseline.main, name: `all-in-one at ${baseline.label}` }] : []),
    { main: "apps/loom/src/main.ts", name: "all-in-one, SQLite file" },
  ];
  for (const target of targets) {
    const key = `loom_bench-${randomBytes(24).toString("base64url")}`;
    const port = await freePort();
    const proc = await startProcess(
      target.main,
      { PORT: String(port), BOOTSTRAP_API_KEY: key },
      `http://127.0.0.1:${port}/healthz`,
    );
    try {
      const api = apiClient(`http://127.0.0.1:${port}`, key);
      const assistantId = (await api.post("/assistants", { name: "bench-memory" })).body.assistant_id;
      // Idle: after one run has warmed every path, once the process has settled.
      await seedThroughApi(api, assistantId, 1, 1);
      await sleep(5_000);
      const idle = memoryOf(proc.pid!).rss;
      const started = performance.now();
      await seedThroughApi(api, assistantId, options.runs);
      const seconds = (performance.now() - started) / 1000;
      const after = memoryOf(proc.pid!);
      let backWithin: number | undefined;
      let last = after.rss;
      for (let s = 1; s <= options.settleSeconds; s++) {
        await sleep(1_000);
        last = memoryOf(proc.pid!).rss;
        if (backWithin === undefined && last - idle <= 50 * 1024 * 1024) backWithin = s;
      }
      rows.push({
        deployment: target.name,
        runs: options.runs,
        "runs/s": Math.round(options.runs / seconds),
        "idle MB": mib(idle),
        "peak MB": mib(after.hwm),
        "after runs MB": mib(after.rss),
        [`${options.settleSeconds} s later MB`]: mib(last),
        "above idle MB": mib(last - idle),
        "within 50 MB after": backWithin === undefined ? "not within 60 s" : `${backWithin} s`,
      });
    } finally {
      await stopProcess(proc);
    }
  }
  printTable(
    `Memory after ${options.runs.toLocaleString("en")} runs through the all-in-one process (RSS; goal: within 50 MB of idle within ${options.settleSeconds} s)`,
    rows,
  );
}
