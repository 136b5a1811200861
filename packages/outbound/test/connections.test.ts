import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { Resolve } from "../src/check.ts";
import { type PinnedConnections, pinnedConnections } from "../src/connections.ts";
import { OutboundLimitExceeded } from "../src/errors.ts";
import { outboundFetch } from "../src/fetch.ts";
import { outboundPolicy } from "../src/policy.ts";

/** Names the fake resolver answers from `table`, which a test changes (DNS answering differently from one call to the next). */
const table: Record<string, string> = {};
const resolve: Resolve = async (name) => {
  const address = table[name];
  if (!address) throw new Error(`getaddrinfo ENOTFOUND ${name}`);
  return [{ address, family: 4 }];
};

/** A server on 127.0.0.1 and one on 127.0.0.2, on the same port, each telling which socket a request came on. */
interface Seen {
  server: string;
  socket: Socket;
}
const seen: Seen[] = [];
const servers: Server[] = [];
let port = 0;

const serve = async (address: string) => {
  const server = createServer((request, response) => {
    seen.push({ server: address, socket: request.socket });
    const path = request.url ?? "/";
    if (path === "/hello") response.end(`hello from ${address}`);
    else if (path === "/huge") response.end(Buffer.alloc(256 * 1024, 1));
    else if (path === "/hang") {
      response.writeHead(200);
      response.write("partial ");
    }
  });
  server.listen(port, address);
  await once(server, "listening");
  port = (server.address() as AddressInfo).port;
  servers.push(server);
};

beforeAll(async () => {
  await serve("127.0.0.1");
  await serve("127.0.0.2");
});

afterAll(() => {
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
});

let pools: PinnedConnections[] = [];
afterEach(async () => {
  await Promise.all(pools.map((pool) => pool.close()));
  pools = [];
  seen.length = 0;
});

const policy = outboundPolicy({ allowLoopback: true });
const poolOf = (options: Parameters<typeof pinnedConnections>[0] = {}) => {
  const pool = pinnedConnections(options);
  pools.push(pool);
  return pool;
};
const fetchWith = (connections: PinnedConnections, overrides: { timeoutMs?: number; maxResponseBytes?: number } = {}) =>
  outboundFetch({ policy, maxResponseBytes: 64 * 1024, timeoutMs: 5_000, resolve, connections, ...overrides });
/** The answer's text, once its connection is free again: undici hands it back just after the body's end. */
const text = async (response: Promise<Response>) => {
  const read = await (await response).text();
  await new Promise(setImmediate);
  return read;
};
/** Whether the server saw a connection closed (it may have been before the test looks). */
const closed = (socket: Socket | undefined) => vi.waitFor(() => expect(socket?.destroyed).toBe(true));

describe("kept connections", () => {
  it("reuse one connection for the calls to one checked address", async () => {
    table["tool.invalid"] = "127.0.0.1";
    const pool = poolOf();
    for (let call = 0; call < 3; call++)
      expect(await text(fetchWith(pool)(`http://tool.invalid:${port}/hello`))).toBe("hello from 127.0.0.1");
    expect(seen).toHaveLength(3);
    expect(new Set(seen.map((s) => s.socket)).size).toBe(1);
  });

  it("never give a call a connection to another address than its check gave", async () => {
    const pool = poolOf();
    table["rebound.invalid"] = "127.0.0.1";
    expect(await text(fetchWith(pool)(`http://rebound.invalid:${port}/hello`))).toBe("hello from 127.0.0.1");
    // The name now answers another address: the kept connection to the first one is not used.
    table["rebound.invalid"] = "127.0.0.2";
    expect(await text(fetchWith(pool)(`http://rebound.invalid:${port}/hello`))).toBe("hello from 127.0.0.2");
    expect(seen.map((s) => s.server)).toEqual(["127.0.0.1", "127.0.0.2"]);
    expect(seen[0]?.socket).not.toBe(seen[1]?.socket);
  });

  it("keep a name's connections to itself: another name for the same address connects anew", async () => {
    const pool = poolOf();
    table["one.invalid"] = "127.0.0.1";
    table["two.invalid"] = "127.0.0.1";
    await text(fetchWith(pool)(`http://one.invalid:${port}/hello`));
    await text(fetchWith(pool)(`http://two.invalid:${port}/hello`));
    expect(seen[0]?.socket).not.toBe(seen[1]?.socket);
  });

  it("hold the size and time limits on a reused connection", async () => {
    table["tool.invalid"] = "127.0.0.1";
    const pool = poolOf();
    await text(fetchWith(pool)(`http://tool.invalid:${port}/hello`));
    const tooLarge = await text(
      fetchWith(pool, { maxResponseBytes: 100_000 })(`http://tool.invalid:${port}/huge`),
    ).catch((error: unknown) => error);
    expect(tooLarge).toBeInstanceOf(OutboundLimitExceeded);
    expect((tooLarge as OutboundLimitExceeded).limit).toBe("size");
    const started = performance.now();
    const hanging = await (await fetchWith(pool, { timeoutMs: 200 })(`http://tool.invalid:${port}/hang`))
      .text()
      .catch((error: unknown) => error);
    expect(hanging).toBeInstanceOf(OutboundLimitExceeded);
    expect((hanging as OutboundLimitExceeded).limit).toBe("time");
    expect(performance.now() - started).toBeLessThan(2_000);
    // The second call came on the first one's connection; a cut answer's connection is not given to the next call.
    expect(seen[1]?.socket).toBe(seen[0]?.socket);
    expect(await text(fetchWith(pool)(`http://tool.invalid:${port}/hello`))).toBe("hello from 127.0.0.1");
  });

  it("are kept for a bounded number of addresses, closing the least recently used", async () => {
    const pool = poolOf({ maxAddresses: 2 });
    for (const name of ["a", "b", "c"]) {
      table[`${name}.invalid`] = "127.0.0.1";
      await text(fetchWith(pool)(`http://${name}.invalid:${port}/hello`));
    }
    expect(pool.size).toBe(2);
    await closed(seen[0]?.socket);
    expect(seen.slice(1).every((s) => !s.socket.destroyed)).toBe(true);
  });

  it("are closed once unused for the idle time", async () => {
    table["tool.invalid"] = "127.0.0.1";
    const pool = poolOf({ idleMs: 100 });
    await text(fetchWith(pool)(`http://tool.invalid:${port}/hello`));
    await closed(seen[0]?.socket);
    expect(pool.size).toBe(0);
  });
});
