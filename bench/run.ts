import { loadavg } from "node:os";
import { benchConsole } from "./console.ts";
import { benchEvents } from "./events.ts";
import { benchGetApiKey } from "./get-api-key.ts";
import { benchInProcessTransport } from "./in-process-transport.ts";
import { benchIngestThroughput } from "./knowledge-ingest-throughput.ts";
import { benchQueryLatency } from "./knowledge-query-latency.ts";
import { queryEndpointSubjects } from "./knowledge-query-subjects.ts";
import { benchRetrievalQuality } from "./knowledge-retrieval.ts";
import { benchMemory } from "./memory.ts";
import { benchReplays } from "./replays.ts";
import { benchFollowedRuns } from "./runs-followed.ts";
import { benchRunsThroughput } from "./runs-throughput.ts";
import { benchRunsWithRulesets } from "./runs-with-rulesets.ts";
import { benchStorage } from "./storage.ts";
import { benchStreaming } from "./streaming.ts";
import { benchToolActivities } from "./tool-activities.ts";
import { benchToolCallLatency } from "./tool-call-latency.ts";
import { benchTracing } from "./tracing.ts";

/**
 * `pnpm bench`: every benchmark, each comparing against a baseline measured
 * in the same run (these machines are noisy: read the ratios). Set
 * BENCH_SECONDS / BENCH_CONNECTIONS to change the load; with MONGODB_URL set,
 * store-backed benchmarks also run on MongoDB.
 */
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const mongoUrl = process.env.MONGODB_URL || undefined;
const natsUrl = process.env.NATS_URL || undefined;
// Other work on the machine shows here: figures taken under a high load compare only with their own run's baseline.
console.log(
  `load average at start: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
process.once("beforeExit", () =>
  console.log(
    `load average at end: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  ),
);
if (!natsUrl) console.log("(rows with the NATS bus skipped: NATS_URL is not set)");

const only = process.env.BENCH_ONLY; // "api-keys", "transport", "runs", "rulesets", "memory", "events", "replays", "storage", "streaming", "tracing", "tools", "knowledge" or "console": one benchmark

if (!only || only === "api-keys") {
  await benchGetApiKey({ seconds, connections, natsUrl });
  if (mongoUrl) await benchGetApiKey({ seconds, connections, mongoUrl, natsUrl });
  else console.log("\n(MongoDB rows skipped: MONGODB_URL is not set)");
}
if (!only || only === "transport")
  await benchInProcessTransport({
    calls: Number(process.env.BENCH_TRANSPORT_CALLS ?? 100_000),
    rounds: Number(process.env.BENCH_TRANSPORT_ROUNDS ?? 5),
  });
if (!only || only === "runs") {
  // BENCH_RUNS_ONLY: "ladder", "history", "history-mongo" (runs-throughput.ts) or "followed": one part
  if (process.env.BENCH_RUNS_ONLY !== "followed")
    await benchRunsThroughput({
      seconds: Number(process.env.BENCH_RUN_SECONDS ?? 5),
      rounds: Number(process.env.BENCH_RUN_ROUNDS ?? 3),
      mongoUrl,
      natsUrl,
    });
  if (!process.env.BENCH_RUNS_ONLY || process.env.BENCH_RUNS_ONLY === "followed")
    await benchFollowedRuns({
      seconds: Number(process.env.BENCH_RUN_SECONDS ?? 5),
      rounds: Number(process.env.BENCH_RUN_ROUNDS ?? 3),
    });
}
if (!only || only === "rulesets")
  await benchRunsWithRulesets({
    seconds: Number(process.env.BENCH_RUN_SECONDS ?? 5),
    rounds: Number(process.env.BENCH_RUN_ROUNDS ?? 3),
  });
if (!only || only === "memory")
  await benchMemory({ runs: Number(process.env.BENCH_MEMORY_RUNS ?? 10_000), settleSeconds: 60 });
if (!only || only === "events")
  await benchEvents({ seconds: Number(process.env.BENCH_EVENT_SECONDS ?? 5), mongoUrl, natsUrl });
if (!only || only === "replays") await benchReplays({ mongoUrl, natsUrl });
if (!only || only === "storage") {
  await benchStorage({
    sizeMiB: Number(process.env.BENCH_STORAGE_MIB ?? 256),
    rounds: Number(process.env.BENCH_STORAGE_ROUNDS ?? 5),
    seconds,
    connections,
  });
}
if (!only || only === "streaming") await benchStreaming({ requests: Number(process.env.BENCH_STREAM_REQUESTS ?? 30) });
if (!only || only === "tracing") {
  await benchTracing({
    seconds,
    connections,
    fanOutSeconds: Number(process.env.BENCH_EVENT_SECONDS ?? 5),
    rounds: Number(process.env.BENCH_TRACING_ROUNDS ?? 2),
    mongoUrl,
    natsUrl,
  });
}
if (!only || only === "tools") {
  if (process.env.BENCH_TOOLS_ONLY !== "latency")
    await benchToolActivities({ seconds, connections, rounds: Number(process.env.BENCH_TOOL_ROUNDS ?? 3) });
  if (process.env.BENCH_TOOLS_ONLY !== "activities")
    await benchToolCallLatency({
      seconds: Number(process.env.BENCH_TOOL_SECONDS ?? 10),
      clients: (process.env.BENCH_TOOL_CLIENTS ?? "1,4,16").split(",").map(Number),
    });
}
if (!only || only === "knowledge") {
  const part = process.env.BENCH_KNOWLEDGE_ONLY; // "quality", "ingest" or "query": one part
  if (!part || part === "quality") await benchRetrievalQuality({ subjects: queryEndpointSubjects });
  if (!part || part === "ingest")
    await benchIngestThroughput({
      keywordMB: Number(process.env.BENCH_INGEST_MB ?? 20),
      memoryMB: Number(process.env.BENCH_INGEST_MEMORY_MB ?? 100),
    });
  if (!part || part === "query")
    await benchQueryLatency({ sizes: (process.env.BENCH_QUERY_CHUNKS ?? "10000,100000").split(",").map(Number) });
}
if (!only || only === "console") await benchConsole({ rounds: Number(process.env.BENCH_CONSOLE_ROUNDS ?? 10) });
