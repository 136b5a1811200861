import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { readDockerfile } from "@loom/testing/dockerfile";
import { canReenactImage, dockerfilePath, type ReenactedImage, reenactImage } from "@loom/testing/image";
import { freePort } from "@loom/testing/processes";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The image's default app, the all-in-one process, started as the image
 * starts it: its CMD, as its USER (uid 1000, no root), with its ENV, in its
 * /app owned by root, with its /data volume. No container engine runs here,
 * so the image is re-enacted (packages/testing/src/image.ts says what is real
 * and what stands in). Only PORT is set from outside (as `docker run -e
 * PORT=…` would), so parallel test runs do not collide.
 */
describe("the image's base", () => {
  it("is a Node.js 24 image pinned by digest, so a rebuild gets the same one", () => {
    const { args, stages } = readDockerfile(dockerfilePath);
    // Every stage starts from NODE_IMAGE or from an earlier stage.
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the Dockerfile's own ARG reference, as FROM writes it.
    const nodeImage = "${NODE_IMAGE}";
    stages.forEach((stage, i) =>
      expect([nodeImage, ...stages.slice(0, i).map((earlier) => earlier.name)]).toContain(stage.from),
    );
    expect(args.NODE_IMAGE).toMatch(/^node:24\.\d+\.\d+-slim@sha256:[0-9a-f]{64}$/);
  });
});

const cannot = canReenactImage();
if (cannot) console.warn(`image.test.ts skipped: ${cannot}`);

describe.skipIf(cannot !== undefined)("the image (infra/docker/Dockerfile)", () => {
  let image: ReenactedImage;
  let child: ChildProcess | undefined;
  let port: number;
  const lines: string[] = [];
  let listening: string | undefined;

  beforeAll(async () => {
    image = reenactImage();
    port = await freePort();
    child = image.run({ PORT: String(port) });
    child.stderr!.on("data", (chunk: Buffer) => lines.push(chunk.toString()));
    const output = createInterface({ input: child.stdout! });
    const exited = once(child, "exit").then(([code, signal]) => `exited with ${code ?? signal}`);
    const started = new Promise<string>((resolve) => {
      output.on("line", (line) => {
        lines.push(line);
        const entry = parseLogLine(line);
        if (entry?.msg?.startsWith("Loom is listening") && entry.url) resolve(entry.url);
      });
    });
    const timeout = new Promise<string>((resolve) => setTimeout(() => resolve("did not start within 60 s"), 60_000));
    const outcome = await Promise.race([started, exited, timeout]);
    if (outcome.startsWith("http")) listening = outcome;
    else throw new Error(`the image's CMD ${outcome}:\n${lines.join("\n")}`);
  }, 180_000);

  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await once(child, "exit");
    }
    image?.remove();
  });

  it("runs as uid 1000 in a root-owned /app, with test tooling left out of its packages", () => {
    expect(image.user).toBe("1000:1000");
    const app = statSync(join(image.root, "app"));
    expect([app.uid, app.mode & 0o022]).toEqual([0, 0]);
    const installed = readdirSync(join(image.root, "app/node_modules/.pnpm"));
    expect(installed.filter((name) => /^(vitest|vite|playwright-core|typescript|turbo)@/.test(name))).toEqual([]);
  });

  it("listens on every interface, and answers there", async () => {
    expect(listening).toBe(`http://0.0.0.0:${port}`);
    // The kernel's own account: a listening IPv4 socket on 0.0.0.0:<port>.
    const sockets = readFileSync("/proc/net/tcp", "utf8")
      .split("\n")
      .slice(1)
      .map((line) => line.trim().split(/\s+/));
    const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
    expect(sockets.some(([, local, , state]) => local === `00000000:${hexPort}` && state === "0A")).toBe(true);
    const response = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(response.status).toBe(200);
  });

  it("serves the console: / leads to its page, whose script is among the image's files", async () => {
    const page = await fetch(`http://127.0.0.1:${port}/`);
    expect(new URL(page.url).pathname).toBe("/console");
    expect(page.status).toBe(200);
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(await page.text())?.[1];
    expect(script).toBeDefined();
    const served = await fetch(`http://127.0.0.1:${port}${script}`);
    expect(served.status).toBe(200);
    expect(served.headers.get("content-type")).toContain("javascript");
  });

  it("keeps its data in the /data volume, owned by the app user, and nothing in /app", () => {
    expect(image.volumes).toEqual(["/data"]);
    expect(image.env.LOOM_DATA_DIR).toBe("/data");
    const data = join(image.root, "data");
    expect(readdirSync(data)).toEqual(expect.arrayContaining(["loom.db", "loom.lock", "loom.pid", "signing-key"]));
    expect(statSync(join(data, "loom.db")).uid).toBe(1000);
    expect(existsSync(join(image.root, "app/.loom"))).toBe(false);
  });

  it("stops cleanly on SIGTERM (node is PID 1's process: the CMD execs it)", async () => {
    child!.kill("SIGTERM");
    const [code] = await once(child!, "exit");
    expect(code).toBe(0);
  });
});

/** A JSON log line (stdout is a pipe), or undefined for anything else. */
function parseLogLine(line: string): { msg?: string; url?: string } | undefined {
  try {
    return JSON.parse(line) as { msg?: string; url?: string };
  } catch {
    return undefined;
  }
}
