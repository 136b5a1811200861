import { randomBytes } from "node:crypto";
import { startSplitStack } from "@loom/test-stacks/split-stack";
import { apiClient } from "@loom/testing/http";
import { needsJaeger, startJaeger } from "@loom/testing/jaeger";
import { freePort, startProcess, stopProcess } from "@loom/testing/processes";
import { split } from "./deployments.ts";
import { fanOut } from "./events.ts";
import { bootstrapKeyId } from "./get-api-key.ts";
import { type LoadResult, load, printTable } from "./load.ts";
import { cpuMsOf } from "./process-stats.ts";

/**
 * Issue 16: what tracing costs. GetApiKey (split: gateway + identity
 * processes on the NATS bus; and the all-in-one) and the SSE fan-out (split,
 * MongoDB + NATS), each with tracing off, on (every span exported over OTLP
 * to a Jaeger this bench starts, the SDK's default batching) and on with 10%
 * and with 1% of traces sampled, the modes alternating `rounds` times, each process
 * warmed up to its steady state first (`warmUpSeconds`). Goal: ≤ 10%
 * throughput lost, ≤ 10 ms added p99.
 */
export async function benchTracing(options: {
  seconds: number;
  connections: number;
  fanOutSeconds: number;
  rounds: number;
  mongoUrl?: string;
  natsUrl?: string;
}): Promise<void> {
  if (!needsJaeger("the tracing overhead bench")) return;
  const jaeger = await startJaeger({ lowPriority: true });
  const traced = { OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint };
  const key = `loom_bench-${randomBytes(24).toString("base64url")}`;
  const auth = { authorization: `Bearer ${key}` };
  const modes = [
    ["off", {}],
    ["on", traced],
    // Sampled at the root, as an operator would at load: the others are spans that record nothing.
    ["on, 10% sampled", { ...traced, OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.1" }],
    ["on, 1% sampled", { ...traced, OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: "0.01" }],
  ] as const;
  const apiRows: Array<{
    target: string;
    mode: string;
    result: LoadResult;
    loomCpuPerRequest?: number;
    receiverCores: number;
  }> = [];
  /** The load, with what the receiver spent meanwhile and, given a pid, what that process spent per request. */
  const measured = async (target: string, mode: string, url: string, pid?: number) => {
    await load(target, url, auth, warmUpSeconds, options.connections, 0); // the warm-up
    const [receiver, loom, started] = [cpuMsOf(jaeger.pid), pid ? cpuMsOf(pid) : 0, performance.now()];
    const result = await load(target, url, auth, options.seconds, options.connections, 0);
    const elapsed = performance.now() - started;
    const loomCpuPerRequest = pid
      ? Math.round(((cpuMsOf(pid) - loom) * 1000) / (result.requestsPerSecond * (elapsed / 1000)))
      : undefined;
    apiRows.push({
      target,
      mode,
      result,
      loomCpuPerRequest,
      receiverCores: (cpuMsOf(jaeger.pid) - receiver) / elapsed,
    });
  };
  const fanRows: Array<{ step: string; mode: string; sentPerSecond: number; lost: number; p50: number; p99: number }> =
    [];
  try {
    for (let round = 0; round < options.rounds; round++) {
      // Every other round backwards: no mode always comes first (a fresh machine) or last.
      for (const [mode, env] of round % 2 === 0 ? modes : [...modes].reverse()) {
        const stack = await startSplitStack(
          { ...(options.natsUrl ? { NATS_URL: options.natsUrl } : {}), ...env },
          { identity: { BOOTSTRAP_API_KEY: key } },
        );
        const keyId = await bootstrapKeyId(apiClient(stack.gatewayUrl, key));
        const target = `GetApiKey: gateway + identity processes (memory; ${options.natsUrl ? "NATS bus" : "no bus"})`;
        console.log(`tracing: ${target}, tracing ${mode}`);
        await measured(target, mode, `${stack.gatewayUrl}/api-keys/${keyId}`);
        await stack.stop();

        const port = await freePort();
        const loom = await startProcess(
          "apps/loom/src/main.ts",
          { PORT: String(port), BOOTSTRAP_API_KEY: key, ...env },
          `http://127.0.0.1:${port}/healthz`,
        );
        const loomKeyId = await bootstrapKeyId(apiClient(`http://127.0.0.1:${port}`, key));
        const allInOne = "GetApiKey: all-in-one process (SQLite file)";
        console.log(`tracing: ${allInOne}, tracing ${mode}`);
        await measured(allInOne, mode, `http://127.0.0.1:${port}/api-keys/${loomKeyId}`, loom.pid);
        await stopProcess(loom);
      }
    }
    if (options.mongoUrl && options.natsUrl) {
      const ladder = (process.env.BENCH_FANOUT ?? "1000x1000")
        .split(",")
        .map((s) => s.split("x").map(Number) as [number, number]);
      for (let round = 0; round < options.rounds; round++) {
        for (const [mode, env] of modes) {
          const d = await split(key, options.mongoUrl, options.natsUrl, env);
          for (const [subscribers, rate] of ladder) {
            console.log(`tracing: fan-out ${subscribers} × ${rate}/s on ${d.name}, tracing ${mode}`);
            const f = await fanOut(
              d,
              key,
              subscribers,
              rate,
              options.fanOutSeconds,
              Number(process.env.BENCH_SUBSCRIBER_THREADS ?? 2),
            );
            fanRows.push({
              step: `${subscribers} subscribers × ${rate} ev/s`,
              mode,
              sentPerSecond: f.sentPerSecond,
              lost: f.expected - f.delivered,
              p50: f.p50,
              p99: f.p99,
            });
          }
          await d.stop();
        }
      }
    } else console.log("(fan-out rows skipped: MONGODB_URL and NATS_URL are both needed)");
  } finally {
    await jaeger.close();
  }

  const targets = [...new Set(apiRows.map((r) => r.target))];
  printTable(
    `Tracing overhead, GetApiKey — ${options.connections} connections, ${options.seconds} s per row after ${warmUpSeconds} s of warm-up, off/on alternating ${options.rounds}× (goal: ≤ 10% fewer req/s, ≤ 10 ms more p99)`,
    targets.flatMap((target) => {
      const of = (mode: string) => apiRows.filter((r) => r.target === target && r.mode === mode).map((r) => r.result);
      const rps = (rs: LoadResult[]) => mean(rs.map((r) => r.requestsPerSecond));
      const p99 = (rs: LoadResult[]) => mean(rs.map((r) => r.p99));
      const off = of("off");
      return [
        ...apiRows
          .filter((r) => r.target === target)
          .map((r) => ({
            target,
            tracing: r.mode,
            "req/s": Math.round(r.result.requestsPerSecond),
            "p50 ms": r.result.p50,
            "p99 ms": r.result.p99,
            "Loom CPU µs/req": r.loomCpuPerRequest ?? "-",
            "receiver cores": r.receiverCores.toFixed(2),
            "non-2xx": r.result.non2xx,
            errors: r.result.errors,
          })),
        ...modes.slice(1).map(([mode]) => ({
          target,
          tracing: `${mode} vs off (means)`,
          "req/s": signed((100 * rps(of(mode))) / rps(off) - 100, "%"),
          "p50 ms": "-",
          "p99 ms": signed(p99(of(mode)) - p99(off), " ms"),
          "Loom CPU µs/req": cpuRatio(
            apiRows.filter((r) => r.target === target),
            mode,
          ),
          "receiver cores": "-",
          "non-2xx": "-",
          errors: "-",
        })),
      ];
    }),
  );
  if (fanRows.length) {
    const steps = [...new Set(fanRows.map((r) => r.step))];
    printTable(
      `Tracing overhead, SSE fan-out on one structure run (5 processes, MongoDB + NATS), ${options.fanOutSeconds} s of appends per row, off/on alternating ${options.rounds}×`,
      steps.flatMap((step) => {
        const of = (mode: string) => fanRows.filter((r) => r.step === step && r.mode === mode);
        const sent = (mode: string) => mean(of(mode).map((r) => r.sentPerSecond));
        const p99 = (mode: string) => mean(of(mode).map((r) => r.p99));
        return [
          ...fanRows
            .filter((r) => r.step === step)
            .map((r) => ({
              step,
              tracing: r.mode,
              "sent ev/s": Math.round(r.sentPerSecond),
              lost: r.lost,
              "p50 ms": Math.round(r.p50),
              "p99 ms": Math.round(r.p99),
            })),
          ...modes.slice(1).map(([mode]) => ({
            step,
            tracing: `${mode} vs off (means)`,
            "sent ev/s": signed((100 * sent(mode)) / sent("off") - 100, "%"),
            lost: "-",
            "p50 ms": "-",
            "p99 ms": signed(p99(mode) - p99("off"), " ms"),
          })),
        ];
      }),
    );
  }
  const failed = apiRows.filter((r) => r.result.non2xx > 0 || r.result.errors > 0);
  if (failed.length > 0)
    throw new Error(`requests failed in: ${failed.map((r) => `${r.target} (tracing ${r.mode})`).join(", ")}`);
}

/**
 * Each process is driven this long before its row is measured: a fresh
 * process took ~6 s of load to reach its steady throughput, a traced one
 * longer (docs/benchmarks.md, "Method"), and a 1 s
 * warm-up measured the traced modes mid-way there. Every mode gets the same.
 */
const warmUpSeconds = Number(process.env.BENCH_TRACING_WARM_UP ?? 8);

/** The mean Loom CPU per request of `mode`'s rows against the "off" rows', as a change (rows without it: "-"). */
function cpuRatio(rows: Array<{ mode: string; loomCpuPerRequest?: number }>, mode: string): string {
  const of = (m: string) =>
    rows.filter((r) => r.mode === m && r.loomCpuPerRequest !== undefined).map((r) => r.loomCpuPerRequest!);
  const [on, off] = [of(mode), of("off")];
  if (on.length === 0 || off.length === 0) return "-";
  return signed((100 * mean(on)) / mean(off) - 100, "%");
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

const signed = (value: number, unit: string) => `${value >= 0 ? "+" : ""}${value.toFixed(1)}${unit}`;
