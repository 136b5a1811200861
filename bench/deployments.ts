import { randomBytes } from "node:crypto";
import { freePort, startProcess, stopProcess } from "./processes.ts";
import { startSplitStack } from "./split-stack.ts";

/** A Loom deployment the event benches drive through its gateway. */
export interface Deployment {
  name: string;
  gatewayUrl: string;
  /** The processes whose memory a bench may watch, by name: the all-in-one, or the split stack's gateway and events. */
  pids: Record<string, number>;
  stop(): Promise<void>;
}

/** The all-in-one process with in-memory stores and bus. */
export async function embedded(key: string): Promise<Deployment> {
  const port = await freePort();
  const proc = await startProcess("apps/loom/src/main.ts", { PORT: String(port), BOOTSTRAP_API_KEY: key }, `http://127.0.0.1:${port}/healthz`);
  return { name: "all-in-one, in-memory", gatewayUrl: `http://127.0.0.1:${port}`, pids: { loom: proc.pid! }, stop: () => stopProcess(proc) };
}

/** Five processes on MongoDB and NATS, fresh databases. */
export async function split(key: string, mongoUrl: string, natsUrl: string): Promise<Deployment> {
  const db = `loom_bench_${randomBytes(4).toString("hex")}`;
  const stack = await startSplitStack(
    { MONGODB_URL: mongoUrl, NATS_URL: natsUrl },
    {
      identity: { MONGODB_DB: `${db}_identity`, BOOTSTRAP_API_KEY: key },
      assistants: { MONGODB_DB: `${db}_assistants` },
      events: { MONGODB_DB: `${db}_events` },
      runs: { MONGODB_DB: `${db}_runs` },
    },
  );
  return { name: "5 processes, MongoDB + NATS", gatewayUrl: stack.gatewayUrl, pids: { gateway: stack.pids.gateway!, events: stack.pids.events! }, stop: stack.stop };
}
