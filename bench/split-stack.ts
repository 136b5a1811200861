import { randomBytes } from "node:crypto";
import type { ChildProcess } from "node:child_process";
import { freePort, startProcess, stopProcess } from "./processes.ts";

export interface SplitStack {
  gatewayUrl: string;
  /** Each process's id, by name (gateway, events, ...): for benches that watch their memory. */
  pids: Record<string, number>;
  stop(): Promise<void>;
}

/**
 * Every service and the gateway as separate processes on loopback, as in
 * production. `shared` goes to every process (MONGODB_URL, NATS_URL, ...);
 * `perService` to one.
 */
export async function startSplitStack(shared: Record<string, string>, perService: Partial<Record<string, Record<string, string>>> = {}): Promise<SplitStack> {
  const serviceToken = randomBytes(24).toString("base64url");
  const ports = { identity: await freePort(), assistants: await freePort(), events: await freePort(), runs: await freePort(), gateway: await freePort() };
  const url = (name: keyof typeof ports) => `http://127.0.0.1:${ports[name]}`;
  const urls = { IDENTITY_URL: url("identity"), ASSISTANTS_URL: url("assistants"), EVENTS_URL: url("events"), RUNS_URL: url("runs") };
  const started: ChildProcess[] = [];
  const pids: Record<string, number> = {};
  const start = async (name: keyof typeof ports, extra: Record<string, string> = {}) => {
    const env = { ...shared, ...extra, ...perService[name], PORT: String(ports[name]), HOST: "127.0.0.1", SERVICE_TOKEN: serviceToken };
    const child = await startProcess(`apps/${name}/src/main.ts`, env, `${url(name)}/healthz`);
    started.push(child);
    pids[name] = child.pid!;
  };
  await start("identity");
  await start("assistants");
  await start("events");
  await start("runs", { ASSISTANTS_URL: urls.ASSISTANTS_URL, EVENTS_URL: urls.EVENTS_URL });
  await start("gateway", urls);
  return {
    gatewayUrl: url("gateway"),
    pids,
    stop: async () => {
      for (const child of started.reverse()) await stopProcess(child);
    },
  };
}
