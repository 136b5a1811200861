import { connect } from "node:net";
import { createLogger } from "@loom/telemetry/logger";
import { afterEach, describe, expect, it } from "vitest";
import { type ConnectionLimits, connectionsForDescriptorLimit, descriptorLimit } from "../src/connection-limits.ts";
import { listen, type RunningServer, startRpcServer } from "../src/rpc-server.ts";
import { createHttpServer } from "../src/turn-batched-response.ts";

const fast: ConnectionLimits = { headersTimeoutMs: 500, keepAliveTimeoutMs: 300, bodyIdleTimeoutMs: 500 };
const logger = createLogger("test", "silent");

/** A raw connection that writes `bytes` (if any) and resolves what came back and when the server closed it. */
function exchange(url: string, bytes?: string): Promise<{ text: string; closedAfterMs: number }> {
  const { hostname, port } = new URL(url);
  const opened = Date.now();
  return new Promise((resolve) => {
    let text = "";
    const socket = connect(Number(port), hostname, () => bytes && socket.write(bytes));
    socket.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
    socket.on("error", () => {});
    socket.on("close", () => resolve({ text, closedAfterMs: Date.now() - opened }));
    // Never held past 5 s, whatever the server does: the test then fails on the time.
    setTimeout(() => socket.destroy(), 5_000).unref();
  });
}

let server: RunningServer | undefined;
afterEach(() => server?.close());

/** Both kinds of Loom's servers: the gateway's (turn-batched) and a service's (Connect and plain routes). */
const servers: Array<[string, () => Promise<RunningServer>]> = [
  [
    "the gateway's HTTP server",
    () =>
      listen(
        createHttpServer((req, res) => req.resume().on("end", () => res.end("done")), fast, logger),
        0,
        "127.0.0.1",
      ),
  ],
  [
    "a service's RPC server with plain routes (the storage service's blobs)",
    () =>
      startRpcServer({
        services: [
          {
            name: "plain",
            routes: () => {},
            ready: async () => true,
            close: async () => {},
            http: { prefix: "/plain/", handle: (req, res) => void req.resume().on("end", () => res.end("done")) },
          },
        ],
        serviceToken: "kit-test-token-0123456789",
        logger,
        connections: fast,
      }),
  ],
];

describe.each(servers)("%s", (_name, start) => {
  it("answers 408 and closes a connection that sends no headers within the headers timeout", async () => {
    server = await start();
    const { text, closedAfterMs } = await exchange(server.url);
    expect(text).toMatch(/^HTTP\/1\.1 408 /);
    expect(closedAfterMs).toBeGreaterThanOrEqual(450);
    expect(closedAfterMs).toBeLessThan(2_000);
  });

  it("cuts a request whose body stops arriving within the body-idle timeout; a whole one is answered", async () => {
    server = await start();
    const stalled = await exchange(
      server.url,
      "PUT /plain/x HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nonly some",
    );
    expect(stalled.text).toBe("");
    expect(stalled.closedAfterMs).toBeLessThan(2_000);
    const whole = await exchange(server.url, "PUT /plain/x HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nall!");
    expect(whole.text).toMatch(/^HTTP\/1\.1 200 [\s\S]*done$/);
  });
});

describe("the connection cap", () => {
  it("keeps a quarter of the descriptors (at least 64) for what serving needs besides the clients' sockets", () => {
    expect(connectionsForDescriptorLimit(1024)).toBe(768);
    expect(connectionsForDescriptorLimit(256)).toBe(192);
    expect(connectionsForDescriptorLimit(100)).toBe(36);
    expect(connectionsForDescriptorLimit(undefined)).toBeUndefined();
  });

  it("reads this process's descriptor limit where the system says it (Linux)", () => {
    if (process.platform !== "linux") return void console.log("skipped: /proc/self/limits is Linux's");
    expect(descriptorLimit()).toBeGreaterThan(0);
  });
});
