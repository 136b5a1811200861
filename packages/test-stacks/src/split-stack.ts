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
import { type Balancer, startBalancer } from "./balancer.ts";

/** Every process of the split deployment (the service registry's), each after the services it calls: the gateway last. */
export const splitServices: readonly SplitApp[] = [...callersLast(), gateway.name];
export type SplitService = SplitApp;

export interface SplitStack {
  gatewayUrl: string;
  /** Each process's own URL (its /healthz, /readyz, RPCs). */
  urls: Record<SplitService, string>;
  /** Each process's `/metrics` (on its METRICS_PORT, apart from its API port); replica 0's for a replicated service. */
  metricsUrls: Record<SplitService, string>;
  /** Each replica's `/metrics`, by replica number (one for a service that is not replicated). */
  replicaMetricsUrls: Record<SplitService, string[]>;
  /** A running service's process id (benches watch their memory). */
  pid(name: SplitService, replica?: number): number | undefined;
  /** Stops one service's process (replica 0 unless told): SIGTERM shuts it down, SIGKILL crashes it. */
  stopService(name: SplitService, signal?: "SIGTERM" | "SIGKILL", replica?: number): Promise<void>;
  /** Starts a new process of a service (stopped before) on its port, with its settings and `extra`. */
  startService(name: SplitService, extra?: Record<string, string>, replica?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface SplitStackOptions extends ProcessOptions {
  /**
   * How many processes a service runs side by side (1 unless told), on one
   * store and one bus as replicas are deployed. Its URL is then a balancer's
   * (`startBalancer`) that passes each connection to a replica that is up.
   */
  replicas?: Partial<Record<SplitService, number>>;
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
  options: SplitStackOptions = {},
): Promise<SplitStack> {
  const serviceToken = randomBytes(24).toString("base64url");
  const ports = Object.fromEntries(
    await Promise.all(splitServices.map(async (name) => [name, await freePort()])),
  ) as Record<SplitService, number>;
  const replicaCount = (name: SplitService) => options.replicas?.[name] ?? 1;
  const replicated = splitServices.filter((name) => replicaCount(name) > 1);
  // A replicated service's processes each listen on a port of their own, behind the balancer on the service's port.
  const replicaPorts = Object.fromEntries(
    await Promise.all(
      splitServices.map(async (name) => [
        name,
        replicaCount(name) > 1
          ? await Promise.all(Array.from({ length: replicaCount(name) }, () => freePort()))
          : [ports[name]],
      ]),
    ),
  ) as Record<SplitService, number[]>;
  const urls = Object.fromEntries(splitServices.map((name) => [name, `http://127.0.0.1:${ports[name]}`])) as Record<
    SplitService,
    string
  >;
  // Every process on this one host needs a metrics port of its own (each defaults to 9464).
  const metricsPorts = Object.fromEntries(
    await Promise.all(
      splitServices.map(async (name) => [
        name,
        await Promise.all(Array.from({ length: replicaCount(name) }, () => freePort())),
      ]),
    ),
  ) as Record<SplitService, number[]>;
  const replicaMetricsUrls = Object.fromEntries(
    splitServices.map((name) => [name, metricsPorts[name].map((port) => `http://127.0.0.1:${port}/metrics`)]),
  ) as Record<SplitService, string[]>;
  const metricsUrls = Object.fromEntries(splitServices.map((name) => [name, replicaMetricsUrls[name][0]!])) as Record<
    SplitService,
    string
  >;
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
  const running = new Map<string, ChildProcess>();
  const everStarted = new Set<string>();
  const key = (name: SplitService, replica: number) => `${name}#${replica}`;
  const start = async (name: SplitService, extra: Record<string, string> = {}, replica = 0) => {
    if (replica >= replicaCount(name)) throw new Error(`${name} has ${replicaCount(name)} replicas`);
    if (running.has(key(name, replica))) throw new Error(`${name} (replica ${replica}) is already running`);
    if (everStarted.has(key(name, replica))) {
      // A restart listens for metrics on a fresh port: the one its predecessor let go may meanwhile have been handed
      // to another test's process (seen once: the restart exited, METRICS_PORT in use). The URLs are read at call time.
      const url = `http://127.0.0.1:${(metricsPorts[name][replica] = await freePort())}/metrics`;
      replicaMetricsUrls[name][replica] = url;
      if (replica === 0) metricsUrls[name] = url;
    }
    everStarted.add(key(name, replica));
    const port = replicaPorts[name][replica]!;
    const env = {
      ...shared,
      ...wiring[name],
      ...perService[name],
      ...extra,
      PORT: String(port),
      METRICS_PORT: String(metricsPorts[name][replica]),
      HOST: "127.0.0.1",
      SERVICE_TOKEN: serviceToken,
    };
    const child = await startProcess(`apps/${name}/src/main.ts`, env, `http://127.0.0.1:${port}/healthz`, options);
    running.set(key(name, replica), child);
  };
  const stopService = async (name: SplitService, signal: "SIGTERM" | "SIGKILL" = "SIGTERM", replica = 0) => {
    const child = running.get(key(name, replica));
    running.delete(key(name, replica));
    if (child) await stopProcess(child, signal);
  };
  const balancers: Balancer[] = await Promise.all(
    replicated.map((name) =>
      // Only the replicas running now: a stopped one's port could be taken by anything meanwhile.
      startBalancer(ports[name], () => replicaPorts[name].filter((_, i) => running.has(key(name, i)))),
    ),
  );
  const stop = async () => {
    // The gateway first, the services it calls last.
    for (const name of [...splitServices].reverse())
      for (let replica = 0; replica < replicaCount(name); replica++) await stopService(name, "SIGTERM", replica);
    await Promise.all(balancers.map((b) => b.close()));
    await rm(blobDir, { recursive: true, force: true });
  };
  // No service calls another while it starts: all at once. Settled, so that none is left running after a failure.
  const starts = await Promise.allSettled(
    splitServices.flatMap((name) => Array.from({ length: replicaCount(name) }, (_, i) => start(name, {}, i))),
  );
  const failed = starts.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) {
    await stop();
    throw failed.reason;
  }
  return {
    gatewayUrl: urls.gateway,
    urls,
    metricsUrls,
    replicaMetricsUrls,
    pid: (name, replica = 0) => running.get(key(name, replica))?.pid,
    stopService,
    startService: start,
    stop,
  };
}
