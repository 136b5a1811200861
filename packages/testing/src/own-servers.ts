import type { ChildProcess } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, startProgram, stopProcess } from "./processes.ts";

/**
 * Test servers a suite starts and stops itself (fault tests), on free
 * loopback ports, never the shared ones. Binaries: the variable .ci/run
 * exports, else the name on PATH, else where .ci/run installs or builds it.
 */
export const serverBinaries = {
  nats: findBinary("LOOM_NATS_SERVER_BIN", "nats-server", ["/usr/sbin/nats-server", "/usr/bin/nats-server"]),
  ferretdb: findBinary("LOOM_FERRETDB_BIN", "ferretdb", [
    join(process.env.HOME ?? "", ".cache/loom-ci/ferretdb-v1.24.2"),
  ]),
  /** The Python of the venv holding the embedding model (no PATH look-up: any other Python lacks the model). */
  embeddings: findBinary("LOOM_EMBEDDINGS_PYTHON", "", cachedVenvPythons("embeddings")),
};

/** A program: the path the variable names (if it exists), else the name on PATH (if a name is given), else the first fallback that exists. */
export function findBinary(variable: string, name: string, fallbacks: string[]): string | undefined {
  const given = process.env[variable];
  if (given) return existsSync(given) ? given : undefined;
  const onPath = name ? (process.env.PATH ?? "").split(delimiter).map((dir) => join(dir, name)) : [];
  return [...onPath, ...fallbacks].find((path) => path && existsSync(path));
}

/** The Pythons of .ci/python-venv.sh's venvs named `name` (one per Python version), newest version first. */
function cachedVenvPythons(name: string): string[] {
  const cache = process.env.LOOM_CI_CACHE ?? join(process.env.HOME ?? "", ".cache/loom-ci");
  const venvs = existsSync(cache) ? readdirSync(cache).filter((entry) => entry.startsWith(`${name}-3.`)) : [];
  const minor = (venv: string) => Number(venv.slice(`${name}-3.`.length));
  return venvs.sort((a, b) => minor(b) - minor(a)).map((venv) => join(cache, venv, "bin", "python"));
}

/** Says out loud that a suite needing its own servers does not run, and why. */
export function needsOwnServers(suite: string, ...kinds: Array<keyof typeof serverBinaries>): boolean {
  const missing = kinds.filter((kind) => !serverBinaries[kind]);
  const hint = {
    nats: "LOOM_NATS_SERVER_BIN / nats-server",
    ferretdb: "LOOM_FERRETDB_BIN / ferretdb (bash .ci/run builds it)",
    embeddings: "LOOM_EMBEDDINGS_PYTHON / embeddings venv (bash .ci/run installs it)",
  };
  if (missing.length)
    console.warn(
      `SKIPPED: ${suite} — no ${missing.map((kind) => hint[kind]).join(", no ")} (see README, "Test servers")`,
    );
  return missing.length === 0;
}

/** A server that can be crashed and started again on the same port (and data). */
export interface OwnServer {
  url: string;
  port: number;
  /** SIGKILL by default: an outage, not a polite shutdown. */
  stop(signal?: "SIGTERM" | "SIGKILL"): Promise<void>;
  start(): Promise<void>;
  /** Freezes it (SIGSTOP): connections stay open and nothing answers, as in a network partition. */
  freeze(): void;
  /** Lets a frozen server go on (SIGCONT). */
  thaw(): void;
  /** Stops it for good and removes its data. */
  close(): Promise<void>;
}

const listening = (port: number) => () =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });

/**
 * Starts a server on a free port; if it dies while starting (another process
 * took the port between the look and the bind), once more on another.
 */
async function ownServer(
  url: (port: number) => string,
  command: string,
  args: (port: number) => Promise<string[]>,
  dataDir?: string,
): Promise<OwnServer> {
  try {
    return await ownServerOn(await freePort(), url, command, args, dataDir);
  } catch {
    return ownServerOn(await freePort(), url, command, args, dataDir);
  }
}

async function ownServerOn(
  port: number,
  url: (port: number) => string,
  command: string,
  args: (port: number) => Promise<string[]>,
  dataDir?: string,
): Promise<OwnServer> {
  let child: ChildProcess | undefined;
  const server: OwnServer = {
    url: url(port),
    port,
    async start() {
      if (child) throw new Error(`${command} is already running`);
      child = await startProgram(command, await args(port), listening(port));
    },
    async stop(signal = "SIGKILL") {
      const running = child;
      child = undefined;
      if (running) await stopProcess(running, signal);
    },
    freeze: () => void child?.kill("SIGSTOP"),
    thaw: () => void child?.kill("SIGCONT"),
    async close() {
      server.thaw();
      await server.stop();
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}

export async function startOwnNats(): Promise<OwnServer> {
  const bin = serverBinaries.nats;
  if (!bin) throw new Error("no nats-server binary");
  return ownServer(
    (port) => `nats://127.0.0.1:${port}`,
    bin,
    async (port) => ["-a", "127.0.0.1", "-p", String(port)],
  );
}

/** FerretDB on SQLite in a data directory of its own, kept across stop/start, with the flags of .ci/run. */
export async function startOwnFerretDb(): Promise<OwnServer> {
  const bin = serverBinaries.ferretdb;
  if (!bin) throw new Error("no FerretDB binary");
  const dataDir = await mkdtemp(join(tmpdir(), "loom-ferretdb-"));
  const args = async (port: number) => [
    "--handler=sqlite",
    `--sqlite-url=file:${dataDir}/`,
    `--listen-addr=127.0.0.1:${port}`,
    "--state-dir=-",
    "--telemetry=disable",
    "--log-level=error",
    `--debug-addr=127.0.0.1:${await freePort()}`,
  ];
  return ownServer((port) => `mongodb://127.0.0.1:${port}/`, bin, args, dataDir);
}

/** The model the local embeddings server (embeddings-server.py) serves: all-MiniLM-L6-v2, int8 ONNX, from PyPI. */
export const localEmbeddingModel = { id: "all-minilm-l6-v2", dimensions: 384 } as const;

/**
 * The local OpenAI-compatible embeddings server; its `url` is the base URL an
 * OpenAI client takes (`…/v1`). It listens once the model is loaded.
 */
export async function startOwnEmbeddings(options: { threads?: number } = {}): Promise<OwnServer> {
  const python = serverBinaries.embeddings;
  if (!python) throw new Error("no Python with the embedding model");
  const script = fileURLToPath(new URL("./embeddings-server.py", import.meta.url));
  return ownServer(
    (port) => `http://127.0.0.1:${port}/v1`,
    python,
    async (port) => [script, "--port", String(port), "--threads", String(options.threads ?? 0)],
  );
}
