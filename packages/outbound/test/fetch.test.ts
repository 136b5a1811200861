import { once } from "node:events";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Resolve } from "../src/check.ts";
import { OutboundLimitExceeded, OutboundRefused } from "../src/errors.ts";
import { outboundFetch } from "../src/fetch.ts";
import { outboundPolicy } from "../src/policy.ts";
import { fetchFollowingRedirects } from "../src/redirects.ts";

/** The tool's name: `.invalid` never resolves (RFC 6761), so reaching the server proves the connection was pinned. */
const toolHost = "tool.invalid";

/** Names the fake resolver knows; the real one knows none of them. */
const resolve: Resolve = async (name) => {
  const table: Record<string, string> = { [toolHost]: "127.0.0.1", "internal.invalid": "10.0.0.1" };
  const address = table[name];
  if (!address) throw new Error(`getaddrinfo ENOTFOUND ${name}`);
  return [{ address, family: 4 }];
};

let server: Server;
let base: string;
const seen: {
  method: string | undefined;
  host: string | undefined;
  path: string | undefined;
  authorization: string | undefined;
}[] = [];

beforeAll(async () => {
  server = createServer((request: IncomingMessage, response) => {
    seen.push({
      method: request.method,
      host: request.headers.host,
      path: request.url,
      authorization: request.headers.authorization,
    });
    const url = new URL(request.url ?? "/", "http://x");
    if (url.pathname === "/hello") response.end("hello from the tool");
    else if (url.pathname === "/redirect") {
      response.writeHead(Number(url.searchParams.get("status") ?? 302), {
        location: url.searchParams.get("to") ?? "/hello",
      });
      response.end();
    } else if (url.pathname === "/huge") {
      response.writeHead(200, { "content-type": "application/octet-stream" });
      const chunk = Buffer.alloc(16 * 1024, 1);
      for (let i = 0; i < 64; i++) response.write(chunk);
      response.end();
    } else if (url.pathname === "/hang") {
      response.writeHead(200);
      response.write("partial ");
      // Never ends: the call's time limit must.
    } else if (url.pathname === "/silent") {
      // Never answers.
    } else {
      response.writeHead(404);
      response.end();
    }
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  base = `http://${toolHost}:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  server.close();
});

const allInOne = outboundPolicy({ allowLoopback: true });
const fetchWith = (overrides: Partial<Parameters<typeof outboundFetch>[0]> = {}) =>
  outboundFetch({ policy: allInOne, maxResponseBytes: 64 * 1024, timeoutMs: 5_000, resolve, ...overrides });

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.unreachable("the call should have failed"),
    (error: unknown) => error,
  );
}

describe("outbound fetch", () => {
  it("connects to the checked address, keeping the name as the Host", async () => {
    const response = await fetchWith()(`${base}/hello`);
    expect(response.status).toBe(200);
    expect(response.url).toBe(`${base}/hello`);
    expect(await response.text()).toBe("hello from the tool");
    expect(seen.at(-1)?.host).toBe(`${toolHost}:${new URL(base).port}`);
  });

  it("asks DNS once, at the check: a name answering differently later changes nothing", async () => {
    let lookups = 0;
    const rebinding: Resolve = async () => (lookups++ === 0 ? [{ address: "127.0.0.1", family: 4 }] : []);
    const response = await fetchWith({ resolve: rebinding })(`${base}/hello`);
    expect(await response.text()).toBe("hello from the tool");
    expect(lookups).toBe(1);
  });

  it("refuses loopback in the split deployment before connecting", async () => {
    const before = seen.length;
    const error = await rejection(fetchWith({ policy: outboundPolicy({ allowLoopback: false }) })(`${base}/hello`));
    expect(error).toBeInstanceOf(OutboundRefused);
    expect((error as Error).message).toBe(
      "tool.invalid resolves to a loopback address, not reachable from tools unless its host is allowed (TOOL_ALLOWED_HOSTS)",
    );
    expect(seen.length).toBe(before);
  });

  it("gives a redirect back instead of following it", async () => {
    const response = await fetchWith()(`${base}/redirect?to=/hello`);
    expect(response.status).toBe(302);
    expect(response.headers.get("location")).toBe("/hello");
  });

  it("follows redirects when asked, checking each hop", async () => {
    const response = await fetchFollowingRedirects(fetchWith(), `${base}/redirect?to=/hello`);
    expect(await response.text()).toBe("hello from the tool");
  });

  it.each([
    ["the metadata address", "http://169.254.169.254/latest/meta-data/", "metadata"],
    ["its integer form", "http://2852039166/", "metadata"],
    ["a name resolving to a private address", "http://internal.invalid/", "private"],
  ])("refuses a redirect to %s", async (_, target, reason) => {
    const error = await rejection(
      fetchFollowingRedirects(fetchWith(), `${base}/redirect?to=${encodeURIComponent(target)}`),
    );
    expect(error).toBeInstanceOf(OutboundRefused);
    expect((error as OutboundRefused).reason).toBe(reason);
  });

  it("changes a POST to a GET on a 303, and keeps it on a 307", async () => {
    const post = { method: "POST", body: "{}", headers: { "content-type": "application/json" } };
    await (await fetchFollowingRedirects(fetchWith(), `${base}/redirect?status=303&to=/hello`, post)).text();
    expect(seen.at(-1)).toMatchObject({ method: "GET", path: "/hello" });
    await (await fetchFollowingRedirects(fetchWith(), `${base}/redirect?status=307&to=/hello`, post)).text();
    expect(seen.at(-1)).toMatchObject({ method: "POST", path: "/hello" });
  });

  it("stops after the most redirects allowed", async () => {
    const loop = `${base}/redirect?to=${encodeURIComponent("/redirect?to=/hello")}`;
    const error = await rejection(fetchFollowingRedirects(fetchWith(), loop, {}, 1));
    expect(error).toBeInstanceOf(OutboundLimitExceeded);
    expect((error as Error).message).toBe(`${toolHost}:${new URL(base).port} went past the limit of 1 redirects`);
  });

  it("drops the caller's headers on a hop to another origin", async () => {
    const other = `http://127.0.0.1:${new URL(base).port}/hello`;
    const init = { headers: { authorization: "Bearer secret" } };
    await (await fetchFollowingRedirects(fetchWith(), `${base}/redirect?to=/hello`, init)).text();
    expect(seen.at(-1)?.authorization).toBe("Bearer secret");
    await (await fetchFollowingRedirects(fetchWith(), `${base}/redirect?to=${encodeURIComponent(other)}`, init)).text();
    expect(seen.at(-1)).toMatchObject({ path: "/hello", authorization: undefined });
  });

  it("cuts an answer past the size limit with a clear error", async () => {
    const response = await fetchWith({ maxResponseBytes: 100_000 })(`${base}/huge`);
    const error = await rejection(response.arrayBuffer());
    expect(error).toBeInstanceOf(OutboundLimitExceeded);
    expect((error as Error).message).toBe("the answer from tool.invalid is larger than 100000 bytes");
  });

  it("reads an answer within the size limit", async () => {
    const response = await fetchWith({ maxResponseBytes: 1024 * 1024 })(`${base}/huge`);
    expect((await response.arrayBuffer()).byteLength).toBe(1024 * 1024);
  });

  it("bounds the whole call in time: no answer, or a body that never ends", async () => {
    const started = performance.now();
    const silent = await rejection(fetchWith({ timeoutMs: 200 })(`${base}/silent`));
    expect(silent).toBeInstanceOf(OutboundLimitExceeded);
    expect((silent as Error).message).toBe(`${toolHost}:${new URL(base).port} did not answer within 200 ms`);
    const response = await fetchWith({ timeoutMs: 200 })(`${base}/hang`);
    const hanging = await rejection(response.text());
    expect(hanging).toBeInstanceOf(OutboundLimitExceeded);
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it("stops when the caller's signal aborts, with the caller's reason", async () => {
    const controller = new AbortController();
    const before = fetchWith()(`${base}/silent`, { signal: controller.signal });
    controller.abort(new Error("run cancelled"));
    expect(((await rejection(before)) as Error).message).toBe("run cancelled");
    const waiting = new AbortController();
    const during = fetchWith()(`${base}/silent`, { signal: waiting.signal });
    setTimeout(() => waiting.abort(new Error("run cancelled")), 50);
    expect(((await rejection(during)) as Error).message).toBe("run cancelled");
  });
});
