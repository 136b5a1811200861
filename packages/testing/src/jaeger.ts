import type { ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, startProgram, stopProcess } from "./processes.ts";

/** The Jaeger .ci/run builds from its module source (JAEGER_BIN), else where it caches it. */
export const jaegerBinary = ((): string | undefined => {
  const given = process.env.JAEGER_BIN;
  if (given) return existsSync(given) ? given : undefined;
  const cached = join(process.env.HOME ?? "", ".cache/loom-ci/jaeger-v1.76.0");
  return existsSync(cached) ? cached : undefined;
})();

/** Says out loud that a suite needing Jaeger does not run, and why. */
export function needsJaeger(suite: string): boolean {
  if (!jaegerBinary)
    console.warn(
      `SKIPPED: ${suite} — no Jaeger: JAEGER_BIN is not set and none is cached (bash .ci/run builds it, about 6 minutes)`,
    );
  return jaegerBinary !== undefined;
}

/** One span as Jaeger's query API (`/api/traces/<id>`) gives it, with its service. */
export interface JaegerSpan {
  spanID: string;
  operationName: string;
  /** The parent's span id, from the CHILD_OF reference (undefined for a root). */
  parentSpanID: string | undefined;
  service: string;
  tags: Record<string, unknown>;
}

export interface Jaeger {
  /** For OTEL_EXPORTER_OTLP_ENDPOINT (OTLP over HTTP). */
  otlpEndpoint: string;
  queryUrl: string;
  /** Its process, for what it costs the machine. */
  pid: number;
  /** The trace's spans as stored so far (empty while Jaeger has none). */
  trace(traceId: string): Promise<JaegerSpan[]>;
  close(): Promise<void>;
}

/**
 * Jaeger v2 with in-memory storage, every listener on loopback and a free
 * port: only the OTLP/HTTP receiver and the query service (its HTTP API and
 * gRPC), from a configuration of its own (the all-in-one default listens on
 * a dozen fixed ports, which two Jaegers on one machine would fight over).
 * `lowPriority` runs it under `nice -n 19`: a bench measuring Loom on two
 * cores shared with the load generator lets the receiver — elsewhere in
 * production — have only what they leave.
 */
export async function startJaeger(options: { lowPriority?: boolean } = {}): Promise<Jaeger> {
  if (!jaegerBinary) throw new Error("no Jaeger binary (JAEGER_BIN)");
  const [otlpPort, httpPort, grpcPort] = [await freePort(), await freePort(), await freePort()];
  const dir = await mkdtemp(join(tmpdir(), "loom-jaeger-"));
  const config = join(dir, "config.yaml");
  await writeFile(
    config,
    [
      "service:",
      "  extensions: [jaeger_storage, jaeger_query]",
      "  pipelines:",
      "    traces:",
      "      receivers: [otlp]",
      "      processors: [batch]",
      "      exporters: [jaeger_storage_exporter]",
      "  telemetry:",
      "    metrics:",
      "      level: none",
      "    logs:",
      "      level: warn",
      "extensions:",
      "  jaeger_query:",
      "    storage:",
      "      traces: memory_store",
      "  jaeger_storage:",
      "    backends:",
      "      memory_store:",
      "        memory:",
      "          max_traces: 100000",
      "receivers:",
      "  otlp:",
      "    protocols:",
      "      http:",
      "        endpoint: 127.0.0.1:0",
      "processors:",
      "  batch:",
      "    timeout: 100ms",
      "exporters:",
      "  jaeger_storage_exporter:",
      "    trace_storage: memory_store",
      "",
    ].join("\n"),
  );
  const queryUrl = `http://127.0.0.1:${httpPort}`;
  const args = [
    `--config=${config}`,
    `--set=receivers.otlp.protocols.http.endpoint=127.0.0.1:${otlpPort}`,
    `--set=extensions.jaeger_query.http.endpoint=127.0.0.1:${httpPort}`,
    `--set=extensions.jaeger_query.grpc.endpoint=127.0.0.1:${grpcPort}`,
  ];
  let child: ChildProcess;
  const previous = process.env.JAEGER_LISTEN_HOST;
  process.env.JAEGER_LISTEN_HOST = "127.0.0.1"; // spawn inherits it; anything the config leaves to its default listens on loopback
  try {
    const [command, commandArgs] = options.lowPriority
      ? ["nice", ["-n", "19", jaegerBinary, ...args]]
      : [jaegerBinary, args];
    child = await startProgram(
      command,
      commandArgs,
      async () => (await fetch(`${queryUrl}/api/services`).catch(() => undefined))?.ok === true,
    );
  } finally {
    if (previous === undefined) delete process.env.JAEGER_LISTEN_HOST;
    else process.env.JAEGER_LISTEN_HOST = previous;
  }
  return {
    otlpEndpoint: `http://127.0.0.1:${otlpPort}`,
    queryUrl,
    pid: child.pid!,
    async trace(traceId) {
      const res = await fetch(`${queryUrl}/api/traces/${traceId}`);
      if (res.status === 404) return [];
      if (!res.ok) throw new Error(`Jaeger answered ${res.status} for trace ${traceId}`);
      const body = (await res.json()) as { data: JaegerTrace[] };
      return body.data.flatMap(spansOf);
    },
    async close() {
      await stopProcess(child);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

interface JaegerTrace {
  spans: Array<{
    spanID: string;
    operationName: string;
    processID: string;
    references?: Array<{ refType: string; spanID: string }>;
    tags?: Array<{ key: string; value: unknown }>;
  }>;
  processes: Record<string, { serviceName: string }>;
}

function spansOf(trace: JaegerTrace): JaegerSpan[] {
  return trace.spans.map((span) => ({
    spanID: span.spanID,
    operationName: span.operationName,
    parentSpanID: span.references?.find((r) => r.refType === "CHILD_OF")?.spanID,
    service: trace.processes[span.processID]?.serviceName ?? "?",
    tags: Object.fromEntries((span.tags ?? []).map((t) => [t.key, t.value])),
  }));
}
