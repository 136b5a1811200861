import type { ServerResponse } from "node:http";
import { Agent, request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { listen, type RunningServer } from "../src/rpc-server.ts";
import { createHttpServer } from "../src/turn-batched-response.ts";

let server: RunningServer | undefined;
afterEach(() => server?.close());

/** A GET over a keep-alive agent: status, one header and the body. */
function get(url: string, agent: Agent): Promise<{ status: number; tag: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    request(url, { agent }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode!, tag: res.headers["x-tag"] as string | undefined, body }));
    })
      .on("error", reject)
      .end();
  });
}

describe("the HTTP server with turn-batched responses", () => {
  it("answers every one of many concurrent requests with its own status, headers and body", async () => {
    server = await listen(
      createHttpServer((req, res) => {
        const n = new URL(req.url!, "http://x").searchParams.get("n")!;
        // Some answer at once, some a turn later: both kinds share batches.
        const answer = () => res.writeHead(Number(n) % 2 ? 201 : 200, { "x-tag": `t${n}` }).end(`body ${n}`);
        if (Number(n) % 3) answer();
        else setImmediate(answer);
      }),
      0,
      "127.0.0.1",
    );
    const agent = new Agent({ keepAlive: true, maxSockets: 20 });
    const answers = await Promise.all(Array.from({ length: 300 }, (_, n) => get(`${server!.url}/?n=${n}`, agent)));
    agent.destroy();
    answers.forEach((answer, n) =>
      expect(answer).toEqual({ status: n % 2 ? 201 : 200, tag: `t${n}`, body: `body ${n}` }),
    );
  });

  it("writes the responses ended during a turn right after it, in the order they were ended, and calls their callbacks", async () => {
    const waiting: ServerResponse[] = [];
    const seen: string[] = [];
    server = await listen(
      createHttpServer((_req, res) => {
        waiting.push(res);
        if (waiting.length < 2) return;
        // Both end in this turn: neither is on the wire until the turn is over.
        for (const [i, response] of waiting.entries()) {
          response.on("finish", () => seen.push(`finish ${i}`));
          response.end(`r${i}`, () => seen.push(`callback ${i}`));
        }
        seen.push(`sent during the turn: ${waiting.map((r) => r.headersSent).join(",")}`);
        setImmediate(() => seen.push(`sent after it: ${waiting.map((r) => r.headersSent).join(",")}`));
      }),
      0,
      "127.0.0.1",
    );
    const agent = new Agent({ keepAlive: true });
    const bodies = await Promise.all([get(server.url, agent), get(server.url, agent)]);
    agent.destroy();
    expect(bodies.map((b) => b.body).sort()).toEqual(["r0", "r1"]);
    expect(seen[0]).toBe("sent during the turn: false,false");
    expect(seen).toContain("sent after it: true,true");
    expect(seen.filter((s) => s.startsWith("finish"))).toEqual(["finish 0", "finish 1"]);
    expect(seen.filter((s) => s.startsWith("callback")).sort()).toEqual(["callback 0", "callback 1"]);
  });

  it("cuts only the connection whose response cannot be ended; the others of its batch are answered", async () => {
    let bad: ServerResponse | undefined;
    server = await listen(
      createHttpServer((req, res) => {
        if (req.url === "/bad") return void (bad = res);
        // A number is not a body: Node refuses it when the batch ends it, next to a good one.
        if (bad) (bad.end as (chunk: unknown) => void)(42);
        bad = undefined;
        res.end("fine");
      }),
      0,
      "127.0.0.1",
    );
    const agent = new Agent({ keepAlive: false });
    const badAnswer = get(`${server.url}/bad`, agent);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const goodAnswer = get(`${server.url}/good`, agent);
    await expect(badAnswer).rejects.toThrow();
    expect(await goodAnswer).toEqual({ status: 200, tag: undefined, body: "fine" });
    // The process is still up and answering.
    expect(await get(`${server.url}/later`, agent)).toEqual({ status: 200, tag: undefined, body: "fine" });
  });

  it("gives a request all the time it needs to arrive (an upload of gigabytes on a slow link), not Node's 5 minutes", () => {
    expect(createHttpServer(() => {}).requestTimeout).toBe(0);
  });
});
