import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

export const repoRoot = fileURLToPath(new URL("..", import.meta.url));

// Whatever happens to the bench, its children do not outlive it.
const children = new Set<ChildProcess>();
process.once("exit", () => children.forEach((child) => child.kill("SIGKILL")));

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.once("error", reject);
  });
}

/** A Node process of ours, started and awaited until its /healthz answers. */
export async function startProcess(script: string, env: Record<string, string>, healthUrl: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [script], {
    cwd: repoRoot,
    // Only what the bench says: an inherited MONGODB_URL or NATS_URL would change what is measured.
    // BENCH_NODE_OPTIONS reaches the servers (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to see where their time goes).
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: "warn", NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS ?? "", ...env },
    stdio: ["ignore", "ignore", "inherit"],
  });
  children.add(child);
  child.once("exit", () => children.delete(child));
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}`);
    const ok = await fetch(healthUrl).then((r) => r.ok, () => false);
    if (ok) return child;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error(`${script} did not become healthy`);
}

export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  await exited;
}
