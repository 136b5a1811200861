import { createServer } from "node:http";
import { describe, expect, it } from "vitest";
import { drainMs, listen } from "../src/rpc-server.ts";

describe("closing a server", () => {
  it("does not wait for a stream that never ends longer than the drain time", async () => {
    const server = await listen(
      createServer((_req, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write(": open\n\n"); // and never ends
      }),
      0,
      "127.0.0.1",
    );
    const res = await fetch(server.url);
    const reader = res.body!.getReader();
    await reader.read();
    const started = Date.now();
    await server.close();
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(drainMs - 100);
    expect(took).toBeLessThan(drainMs + 2_000);
    await expect(reader.read()).rejects.toThrow();
  }, 15_000);
});
