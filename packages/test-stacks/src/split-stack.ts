import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  blobService,
  callersLast,
  callsOf,
  entryOf,
  gateway,
  type ServiceName,
  type SplitApp,
  serviceNames,
} from "@loom/services/registry";
import { freePort, type ProcessOptions, startProcess, stopProcess } from "@loom/testing/processes";

/** Every process of the split deployment (the service registry's), each after the services it calls: the gateway last. */
export const splitServices: readonly SplitApp[] = [...callersLast(), gateway.name];
export type SplitService = SplitApp;

export interface SplitStack {
  gatewayUrl: string;
  /** Each process's own URL (its /healthz, /readyz, RPCs). */
  urls: Record<SplitService, string>;
  /** Each process's `/metrics` (on its METRICS_PORT, apart from its API port). */
  metricsUrls: Record<SplitService, string>;
  /** A running service's process id (benches watch their memory). */
  pid(name: SplitService): number | undefined;
  /** Stops one service's process: SIGTERM shuts it down, SIGKILL crashes it. */
  stopService(name: SplitService, signal?: "SIGTERM" | "SIGKILL"): Promise<void>;
  /** Starts a new process of a service (stopped before) on its port, with its settings and `extra`. */
  startService(name: SplitService, extra?: Record<string, string>): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Every service and the gateway as separate processes on loopback, as in
 * production (`node apps/<service>/src/main.ts`). `shared` goes to every
 * process (MONGODB_URL, NATS_URL, ...); `perService` to one. Used by the
 * bench and by the fault tests, which stop and start single services.
 */
export async function startSplitStack(
  shared: Record<string, string>,
  perService: Partial<Record<SplitService, Record<string, string>>> = {},
  options: ProcessOptions = {},
): Promise<SplitStack> {
  const serviceToken = randomBytes(24).toString("base64url");
  const ports = Object.fromEntries(
    await Promise.all(splitServices.map(async (name) => [name, await freePort()])),
  ) as Record<SplitService, number>;
  const urls = Object.fromEntries(splitServices.map((name) => [name, `http://127.0.0.1:${ports[name]}`])) as Record<
    SplitService,
    string
  >;
  // Every process on this one host needs a metrics port of its own (each defaults to 9464).
  const metricsPorts = Object.fromEntries(
    await Promise.all(splitServices.map(async (name) => [name, await freePort()])),
  ) as Record<SplitService, number>;
  const metricsUrls = Object.fromEntries(
    splitServices.map((name) => [name, `http://127.0.0.1:${metricsPorts[name]}/metrics`]),
  ) as Record<SplitService, string>;
  // Each process knows where the services it calls are (the registry's URL variables): the gateway, all of them.
  const urlSettings = (names: readonly ServiceName[]) =>
    Object.fromEntries(names.map((name) => [entryOf(name).urlVariable, urls[name]]));
  const wiring = Object.fromEntries(
    splitServices.map((name) => [name, urlSettings(name === gateway.name ? serviceNames : callsOf(name))]),
  ) as Record<SplitService, Record<string, string>>;
  // Blob bytes in a directory of this stack's own; signed URLs point at the gateway, which forwards them.
  const blobDir = await mkdtemp(join(tmpdir(), "loom-split-blobs-"));
  Object.assign(wiring[blobService()], {
    BLOB_DIR: blobDir,
    PUBLIC_URL: urls.gateway,
    BLOB_SIGNING_KEY: randomBytes(32).toString("base64url"),
  });
  // The tools service seals secret values with a key it must be given (docs/decisions.md, "Secrets").
  Object.assign(wiring.tools, { SECRETS_KEY: randomBytes(32).toString("base64") });
  const running = new Map<SplitService, ChildProcess>();
  const start = async (name: SplitService, extra: Record<string, string> = {}) => {
    if (running.has(name)) throw new Error(`${name} is already running`);
    const env = {
      ...shared,
      ...wiring[name],
      ...perService[name],
      ...extra,
      PORT: String(ports[name]),
      METRICS_PORT: String(metricsPorts[name]),
      HOST: "127.0.0.1",
      SERVICE_TOKEN: serviceToken,
    };
    running.set(name, await startProcess(`apps/${name}/src/main.ts`, env, `${urls[name]}/healthz`, options));
  };
  const stopService = async (name: SplitService, signal: "SIGTERM" | "SIGKILL" = "SIGTERM") => {
    const child = running.get(name);
    running.delete(name);
    if (child) await stopProcess(child, signal);
  };
  const stop = async () => {
    // The gateway first, the services it calls last.
    for (const name of [...splitServices].reverse()) await stopService(name);
    await rm(blobDir, { recursive: true, force: true });
  };
  // No service calls another while it starts: all at once. Settled, so that none is left running after a failure.
  const starts = await Promise.allSettled(splitServices.map((name) => start(name)));
  const failed = starts.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) {
    await stop();
    throw failed.reason;
  }
  return {
    gatewayUrl: urls.gateway,
    urls,
    metricsUrls,
    pid: (name) => running.get(name)?.pid,
    stopService,
    startService: start,
    stop,
  };
}
