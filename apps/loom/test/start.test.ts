import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { apiClient } from "@loom/testing/http";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));

/** What `pnpm start` runs, as a child process: it prints its URL and first key, and serves. */
describe("the all-in-one process", () => {
  let child: ChildProcess | undefined;
  afterAll(() => void child?.kill("SIGTERM"));

  it("starts with embedded defaults, prints the URL and the bootstrap key, and serves the API", async () => {
    child = spawn(process.execPath, [main], {
      env: { ...process.env, PORT: "0", MONGODB_URL: "", BOOTSTRAP_API_KEY: "", LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    const started = await new Promise<{ url: string; key: string }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no start within 15 s:\n${output}`)), 15_000);
      child!.stdout!.on("data", (chunk: Buffer) => {
        output += chunk.toString();
        const url = /Loom is listening on (http:\/\/[^"\s]+)/.exec(output)?.[1];
        const key = /bootstrap API key \(shown once\): (loom_[A-Za-z0-9_-]+)/.exec(output)?.[1];
        if (url && key) {
          clearTimeout(timer);
          resolve({ url, key });
        }
      });
      child!.once("exit", (code) => reject(new Error(`exited with ${code}:\n${output}`)));
    });
    const anonymous = apiClient(started.url);
    expect((await anonymous.get("/healthz")).status).toBe(200);
    expect((await anonymous.get("/readyz")).status).toBe(200);
    const users = await apiClient(started.url, started.key).get("/api/users");
    expect(users.status).toBe(200);
    expect(users.body.users[0].email).toBe("admin@localhost");

    const exited = new Promise<number | null>((resolve) => child!.once("exit", resolve));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
  });

  it("uses a seeded BOOTSTRAP_API_KEY and never prints it", async () => {
    const seeded = `loom_seeded-${"s3cr3t".repeat(6)}`;
    const proc = spawn(process.execPath, [main], {
      env: { ...process.env, PORT: "0", MONGODB_URL: "", BOOTSTRAP_API_KEY: seeded, LOG_LEVEL: "trace" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    proc.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    proc.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no start within 15 s:\n${output}`)), 15_000);
      proc.stdout!.on("data", () => {
        const found = /Loom is listening on (http:\/\/[^"\s]+)/.exec(output)?.[1];
        if (found) (clearTimeout(timer), resolve(found));
      });
    });
    expect((await apiClient(url, seeded).get("/users")).status).toBe(200);
    const exited = new Promise<number | null>((resolve) => proc.once("exit", resolve));
    proc.kill("SIGTERM");
    await exited;
    // The log was read: it says what was bootstrapped, never with what key.
    expect(output).toContain("bootstrapped the first user, organization and API key");
    expect(output).not.toContain("shown once");
    expect(output).not.toContain(seeded);
    expect(output).not.toContain("s3cr3t");
  });

  it("refuses to start with a bad setting, saying which", async () => {
    const bad = spawn(process.execPath, [main], { env: { ...process.env, PORT: "eighty" }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    bad.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => bad.once("exit", resolve));
    expect(code).toBe(1);
    expect(output).toMatch(/PORT/);
  });
});
