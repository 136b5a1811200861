import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { freshDataDir } from "./data-dir.ts";

export const repoRoot = fileURLToPath(new URL("../../..", import.meta.url));

// Whatever happens to the bench or the test, its children do not outlive it.
const children = new Set<ChildProcess>();
process.once("exit", () => children.forEach((child) => child.kill("SIGKILL")));

/**
 * A port free now for a test's server, chosen below Linux's ephemeral range (32768–60999), where the kernel never
 * puts the local end of an outgoing connection: a process stopped and started again on its port (a restart test)
 * finds it free, where a port from the ephemeral range was once taken meanwhile by some connection's local end.
 * Random within 20000–32767 and checked by listening on it; the kernel's choice if 50 tries find none.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_768);
    if (await listensOn(port)) return port;
  }
  return listensOn(0) as Promise<number>;
}

/** Listens on `port` of 127.0.0.1 and lets it go: the port listened on, or false when it was taken. */
function listensOn(port: number): Promise<number | false> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => {
      const { port: bound } = server.address() as { port: number };
      server.close(() => resolve(bound));
    });
  });
}

export interface ProcessOptions {
  /** The process's stdout, where services log: dropped unless asked for. */
  stdout?: "inherit" | "ignore";
  /** The process's stderr: shown unless dropped. */
  stderr?: "inherit" | "ignore";
}

/**
 * The Node flags a service's process runs with, as the image
 * (infra/docker/Dockerfile) starts it: 2 MB young-generation semi-spaces,
 * no allocation-site pretenuring (docs/decisions.md, "Node flags").
 */
export const serviceNodeFlags = ["--max-semi-space-size=2", "--no-allocation-site-pretenuring"];

/** The gateway's, as the image starts it: 8 MB semi-spaces, as the all-in-one (every request passes through it). */
export const gatewayNodeFlags = ["--max-semi-space-size=8", "--no-allocation-site-pretenuring"];

/**
 * The Node flags `script` runs with in the checkout that holds it: an
 * all-in-one main.ts gets those its checkout's `pnpm start` gives it (8 MB
 * semi-spaces today), the gateway its own, any other script the services' flags. So a baseline
 * revision runs as it shipped, and this one as it ships.
 */
export function nodeFlagsFor(script: string): string[] {
  const absolute = resolve(repoRoot, script);
  const checkout = absolute.endsWith(join("apps", "loom", "src", "main.ts"))
    ? resolve(dirname(absolute), "../../..")
    : undefined;
  if (!checkout)
    return absolute.endsWith(join("apps", "gateway", "src", "main.ts")) ? gatewayNodeFlags : serviceNodeFlags;
  const start = (JSON.parse(readFileSync(join(checkout, "package.json"), "utf8")) as { scripts: { start: string } })
    .scripts.start;
  const command = /\bnode((?:\s+--\S+)*)\s+apps\/loom\/src\/main\.ts/.exec(start);
  if (!command) throw new Error(`no node command for apps/loom/src/main.ts in ${checkout}'s start script: ${start}`);
  return command[1]!.trim().split(/\s+/).filter(Boolean);
}

/** A Node process of ours, started and awaited until its /healthz answers. */
export async function startProcess(
  script: string,
  env: Record<string, string>,
  healthUrl: string,
  options: ProcessOptions = {},
): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...nodeFlagsFor(script), script], {
    cwd: repoRoot,
    // Only what the caller says (and a data directory of its own for the all-in-one): an inherited MONGODB_URL or NATS_URL would change what is measured or tested.
    // BENCH_NODE_OPTIONS reaches the servers (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to see where their time goes).
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      LOG_LEVEL: "warn",
      NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS ?? "",
      LOOM_DATA_DIR: freshDataDir(),
      ...env,
    },
    stdio: ["ignore", options.stdout ?? "ignore", options.stderr ?? "inherit"],
  });
  track(child);
  await waitHealthy(child, script, healthUrl);
  return child;
}

/** Any program (a test server), started and awaited until `ready()` says so. */
export async function startProgram(
  command: string,
  args: string[],
  ready: () => Promise<boolean>,
  options: ProcessOptions = {},
): Promise<ChildProcess> {
  const child = spawn(command, args, { stdio: ["ignore", "ignore", options.stderr ?? "ignore"] });
  track(child);
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${command} exited with ${child.exitCode ?? child.signalCode}`);
    if (await ready()) return child;
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill("SIGKILL");
  throw new Error(`${command} did not become ready`);
}

function track(child: ChildProcess): void {
  children.add(child);
  child.once("exit", () => children.delete(child));
}

async function waitHealthy(child: ChildProcess, script: string, healthUrl: string): Promise<void> {
  // Generous: several processes start at once on a busy two-core machine.
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}`);
    const ok = await fetch(healthUrl).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill("SIGKILL");
  throw new Error(`${script} did not become healthy`);
}

/** Stops a process (SIGTERM: a graceful shutdown; SIGKILL: a crash) and waits until it is gone. */
export async function stopProcess(child: ChildProcess, signal: "SIGTERM" | "SIGKILL" = "SIGTERM"): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill(signal);
  await exited;
}
