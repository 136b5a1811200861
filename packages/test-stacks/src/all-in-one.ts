import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { freshDataDir } from "@loom/testing/data-dir";
import { nodeFlagsFor, repoRoot } from "@loom/testing/processes";

const main = join(repoRoot, "apps", "loom", "src", "main.ts");

/** `pnpm start`'s process, as a child: what it printed, and how it ended. */
export interface AllInOne {
  child: ChildProcess;
  url: string;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** The bootstrap key it printed, waiting a moment for the line (it follows the address); undefined if none came. */
  bootstrapKey(): Promise<string | undefined>;
  /** Sends `signal` and resolves the exit code (null after a kill by signal). */
  stop(signal: NodeJS.Signals): Promise<number | null>;
}

/** How main.ts is started, besides its environment. */
export interface SpawnOptions {
  /** Started under `prlimit --nofile=<n>`: at most n open file descriptors. */
  maxDescriptors?: number;
}

/**
 * Spawns main.ts with `env` over this process's environment (embedded
 * defaults, JSON logs, and a fresh data directory unless `env` names one),
 * collecting everything it prints.
 */
function spawnMain(env: Record<string, string>, options: SpawnOptions = {}) {
  const node = [process.execPath, ...nodeFlagsFor(main), main];
  const [command, ...args] =
    options.maxDescriptors === undefined ? node : ["prlimit", `--nofile=${options.maxDescriptors}`, ...node];
  const child = spawn(command!, args, {
    env: {
      ...process.env,
      MONGODB_URL: "",
      NATS_URL: "",
      BOOTSTRAP_API_KEY: "",
      LOG_LEVEL: "info",
      LOG_FORMAT: "json",
      LOOM_DATA_DIR: freshDataDir(),
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const printed = { text: "" };
  child.stdout!.on("data", (chunk: Buffer) => (printed.text += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (printed.text += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, printed, exited };
}

/** Starts main.ts (see `spawnMain`) and waits until it says where it listens. */
export async function startAllInOne(env: Record<string, string>, options: SpawnOptions = {}): Promise<AllInOne> {
  const { child, printed, exited } = spawnMain(env, options);
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start within 30 s:\n${printed.text}`)), 30_000);
    const look = () => {
      const found = /Loom is listening on (http:\/\/[^"\s]+)/.exec(printed.text)?.[1];
      if (found) clearTimeout(timer), resolve(found);
    };
    child.stdout!.on("data", look);
    void exited.then((code) => (clearTimeout(timer), reject(new Error(`exited with ${code}:\n${printed.text}`))));
  });
  return {
    child,
    url,
    output: () => printed.text,
    bootstrapKey: async () => {
      const key = () => /bootstrap API key \(shown once\): (loom_[A-Za-z0-9_-]+)/.exec(printed.text)?.[1];
      for (let waited = 0; !key() && waited < 3_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
      return key();
    },
    stop: async (signal) => {
      child.kill(signal);
      return exited;
    },
  };
}

/** Runs main.ts (see `spawnMain`) to its end — a start that is refused — and resolves its exit code and output. */
export async function runAllInOneToExit(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const { printed, exited } = spawnMain(env);
  const code = await exited;
  return { code, output: printed.text };
}
