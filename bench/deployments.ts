import { randomBytes } from "node:crypto";
import { type ServiceName, serviceNames } from "@loom/services/registry";
import { startSplitStack } from "@loom/test-stacks/split-stack";
import { freePort, startProcess, stopProcess } from "@loom/testing/processes";
import type { BaselineRevision } from "./baseline-revision.ts";

/** A Loom deployment the event benches drive through its gateway. */
export interface Deployment {
  name: string;
  gatewayUrl: string;
  /** The processes whose memory a bench may watch, by name: the all-in-one, or the split stack's gateway and events. */
  pids: Record<string, number>;
  stop(): Promise<void>;
}

/** The event benches open every subscriber with one key: the stream caps (default 100 per credential, 500 per organization) are lifted. */
const streamCap = { STREAMS_PER_CREDENTIAL: "100000", STREAMS_PER_ORGANIZATION: "100000" };

/** The all-in-one process: its SQLite file in a fresh data directory, the in-process bus. */
export async function embedded(key: string): Promise<Deployment> {
  return allInOne(key, "apps/loom/src/main.ts", "all-in-one, SQLite file");
}

/** The all-in-one process of the baseline revision (bench/baseline-revision.ts): its stores in memory. */
export async function embeddedBaseline(key: string, baseline: BaselineRevision): Promise<Deployment> {
  return allInOne(key, baseline.main, `all-in-one at ${baseline.label}`);
}

async function allInOne(key: string, main: string, name: string): Promise<Deployment> {
  const port = await freePort();
  const proc = await startProcess(
    main,
    { PORT: String(port), BOOTSTRAP_API_KEY: key, ...streamCap },
    `http://127.0.0.1:${port}/healthz`,
  );
  return { name, gatewayUrl: `http://127.0.0.1:${port}`, pids: { loom: proc.pid! }, stop: () => stopProcess(proc) };
}

/** Each service's own fresh database (`<db>_<service>`), by the service registry. */
export const benchDatabases = (db: string) =>
  Object.fromEntries(serviceNames.map((name) => [name, { MONGODB_DB: `${db}_${name}` }])) as Record<
    ServiceName,
    { MONGODB_DB: string }
  >;

/** Five processes on MongoDB and NATS, fresh databases; `env` goes to every process (the tracing bench's OTEL_*). */
export async function split(
  key: string,
  mongoUrl: string,
  natsUrl: string,
  env: Record<string, string> = {},
): Promise<Deployment> {
  const db = `loom_bench_${randomBytes(4).toString("hex")}`;
  const stack = await startSplitStack(
    { MONGODB_URL: mongoUrl, NATS_URL: natsUrl, ...env },
    {
      ...benchDatabases(db),
      identity: { ...benchDatabases(db).identity, BOOTSTRAP_API_KEY: key },
      gateway: streamCap,
    },
  );
  return {
    name: "5 processes, MongoDB + NATS",
    gatewayUrl: stack.gatewayUrl,
    pids: { gateway: stack.pid("gateway")!, events: stack.pid("events")! },
    stop: stack.stop,
  };
}
