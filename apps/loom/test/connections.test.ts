import { spawnSync } from "node:child_process";
import { Agent, type IncomingHttpHeaders, request } from "node:http";
import { connect, type Socket } from "node:net";
import { type AllInOne, startAllInOne } from "@loom/test-stacks/all-in-one";
import { answer, type FakeOpenAI, startFakeOpenAI, trickle } from "@loom/testing/fake-openai";
import { apiClient } from "@loom/testing/http";
import { openSse } from "@loom/testing/sse";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

/** The answer of one request over `agent` (a kept-alive connection when the agent keeps one). */
function call(
  url: string,
  options: { method?: string; agent?: Agent | false; headers?: Record<string, string>; body?: string | Buffer },
): Promise<{ status: number; body: string; headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: options.method ?? "GET", agent: options.agent, headers: options.headers },
      (res) => {
        let body = "";
        res.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode!, body, headers: res.headers }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

/** A raw TCP connection: what the server sent and when it closed the connection. */
function rawConnection(url: string): { socket: Socket; received: () => string; closed: Promise<number> } {
  const { hostname, port } = new URL(url);
  const opened = Date.now();
  const socket = connect(Number(port), hostname);
  let text = "";
  socket.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
  socket.on("error", () => {});
  const closed = new Promise<number>((resolve) => socket.once("close", () => resolve(Date.now() - opened)));
  return { socket, received: () => text, closed };
}

/** `promise`'s value, or "still open" once `ms` have passed. */
const within = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([promise, new Promise<"still open">((r) => setTimeout(() => r("still open"), ms))]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A process under `maxDescriptors` with one asset, `kept.txt`, and a client
 * connection kept alive to it, made before any crowd arrives.
 */
async function startWithKeptAsset(settings: Record<string, string>, maxDescriptors: number) {
  const loom = await startAllInOne({ PORT: "0", ...settings }, { maxDescriptors });
  const key = (await loom.bootstrapKey())!;
  const api = apiClient(loom.url, key);
  const url = await uploadUrl(api, "kept.txt");
  expect((await api.put(new URL(url).pathname, "kept bytes", { "content-type": "text/plain" })).status).toBe(200);
  const bucket = (await api.get("/buckets")).body.buckets[0].bucket_id as string;
  const kept = new Agent({ keepAlive: true, maxSockets: 1 });
  return { loom, url, bucket, kept, auth: { authorization: `Bearer ${key}` } };
}

async function uploadUrl(api: ReturnType<typeof apiClient>, name: string): Promise<string> {
  const bucket = (await api.post("/buckets", { name: "files" })).body.bucket_id as string;
  expect((await api.put(`/buckets/${bucket}/assets`, { name })).status).toBe(201);
  return (await api.post(`/buckets/${bucket}/asset-urls/${name}`)).body.url as string;
}

const prlimit = spawnSync("prlimit", ["--version"]).status === 0;
if (!prlimit) console.log("skipping the descriptor-exhaustion test: prlimit (util-linux) is not installed");

/** Issue #31 item 6: idle connections must neither be held for ever nor take the process down. */
describe("connections to the all-in-one process", () => {
  let loom: AllInOne | undefined;
  afterEach(async () => void (await loom?.stop("SIGKILL")));

  it.skipIf(!prlimit)(
    "with more idle connections than descriptors: refuses new ones, keeps answering those already open, and accepts again once they go",
    { timeout: 60_000 },
    async () => {
      const maxDescriptors = 256;
      const started = await startWithKeptAsset({}, maxDescriptors);
      loom = started.loom;
      const { bucket, kept, auth } = started;

      // One connection of a client already served, kept alive through the crowd.
      expect((await call(`${loom.url}/users`, { agent: kept, headers: auth })).status).toBe(200);

      // More idle connections than the process has descriptors: none sends a byte.
      const crowd = Array.from({ length: maxDescriptors + 150 }, () => rawConnection(loom!.url));
      await sleep(1_000);
      // A new connection is refused at once, not left hanging.
      const refused = await within(
        call(`${loom.url}/healthz`, { agent: false }).then(
          (r) => `answered ${r.status}`,
          () => "refused",
        ),
        5_000,
      );
      expect(refused).toBe("refused");
      expect(loom.output()).toContain("refusing new connections");

      // Long enough for every timer of the process to run (the memory release looks every 5 s), the
      // kept connection used within its keep-alive timeout: it still gets answers, a blob's file too.
      for (let round = 0; round < 4; round++) {
        expect((await call(`${loom.url}/users`, { agent: kept, headers: auth })).status).toBe(200);
        const asset = await call(`${loom.url}/buckets/${bucket}/assets/kept.txt?include_contents=true`, {
          agent: kept,
          headers: auth,
        });
        expect(asset.status).toBe(200);
        expect(JSON.parse(asset.body).contents).toBe("kept bytes");
        await sleep(2_000);
      }
      expect(loom.child.exitCode).toBeNull();

      for (const connection of crowd) connection.socket.destroy();
      await sleep(500);
      expect((await call(`${loom.url}/healthz`, { agent: false })).status).toBe(200);
      expect((await call(`${loom.url}/users`, { agent: kept, headers: auth })).status).toBe(200);
      kept.destroy();
      expect(loom.child.exitCode).toBeNull();
    },
  );

  it.skipIf(!prlimit)(
    "out of descriptors with no cap: what needs one more is 503 with Retry-After, the process lives, and serves again once they are back",
    { timeout: 60_000 },
    async () => {
      const maxDescriptors = 256;
      // A cap above the limit: the crowd takes every descriptor, as several listeners or a lower system limit would.
      const started = await startWithKeptAsset({ HTTP_MAX_CONNECTIONS: "100000" }, maxDescriptors);
      loom = started.loom;
      const { url, bucket, kept, auth } = started;
      const contents = () =>
        call(`${loom!.url}/buckets/${bucket}/assets/kept.txt?include_contents=true`, { agent: kept, headers: auth });
      const blob = () => call(url, { agent: kept });
      expect((await contents()).status).toBe(200);

      const crowd = Array.from({ length: maxDescriptors + 150 }, () => rawConnection(loom!.url));
      await sleep(1_000);
      // Opening the blob's file fails (EMFILE): a retry later will do, so 503, not a 500 or a crash.
      for (const answer of [await contents(), await blob()]) {
        expect(answer.status).toBe(503);
        expect(JSON.parse(answer.body).type).toBe("Unavailable");
        expect(Number(answer.headers["retry-after"])).toBeGreaterThan(0);
        expect(answer.body).not.toMatch(/EMFILE|too many open files/);
      }
      // Long enough for every timer of the process to run (the memory release looks every 5 s). Connections
      // from before the crowd idle out meanwhile and free a descriptor or two: 200 or 503, never a 500.
      for (let round = 0; round < 3; round++) {
        await sleep(2_000);
        for (const answer of [await contents(), await blob()]) expect([200, 503]).toContain(answer.status);
      }
      expect(loom.child.exitCode).toBeNull();

      for (const connection of crowd) connection.socket.destroy();
      await sleep(500);
      expect(JSON.parse((await contents()).body).contents).toBe("kept bytes");
      expect((await blob()).body).toBe("kept bytes");
      kept.destroy();
      expect(loom.child.exitCode).toBeNull();
    },
  );
});

describe("the all-in-one process's connection timeouts", () => {
  let loom: AllInOne;
  let model: FakeOpenAI;
  let api: ReturnType<typeof apiClient>;
  let key: string;
  beforeAll(async () => {
    model = await startFakeOpenAI();
    loom = await startAllInOne({
      PORT: "0",
      HTTP_HEADERS_TIMEOUT_MS: "1000",
      HTTP_BODY_IDLE_TIMEOUT_MS: "1000",
      HTTP_KEEP_ALIVE_TIMEOUT_MS: "500",
      DEFAULT_MODEL: "openai-compatible:fake-model",
      OPENAI_COMPATIBLE_BASE_URL: model.baseUrl,
    });
    key = (await loom.bootstrapKey())!;
    api = apiClient(loom.url, key);
  }, 60_000);
  afterAll(async () => {
    await loom?.stop("SIGKILL");
    await model?.close();
  });

  it("answers 408 and closes a connection that sends no headers within HTTP_HEADERS_TIMEOUT_MS", async () => {
    const silent = rawConnection(loom.url);
    const closedAfter = await within(silent.closed, 5_000);
    expect(closedAfter).not.toBe("still open");
    // Node looks for late headers every quarter of the timeout: closed within 1.25 s, plus a busy machine's slack.
    expect(closedAfter).toBeGreaterThanOrEqual(900);
    expect(closedAfter).toBeLessThan(3_000);
    expect(silent.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it("closes a connection whose headers trickle in (slowloris): the timeout runs from their first byte, not the last", async () => {
    const slow = rawConnection(loom.url);
    slow.socket.write(`GET /healthz HTTP/1.1\r\nHost: loom\r\n`);
    const trickle = setInterval(() => slow.socket.writable && slow.socket.write(`X-Slow: ${Date.now()}\r\n`), 200);
    const closedAfter = await within(slow.closed, 5_000);
    clearInterval(trickle);
    expect(closedAfter).not.toBe("still open");
    expect(closedAfter).toBeLessThan(3_000);
    expect(slow.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it("closes a kept-alive connection that stays idle after its answer", async () => {
    const idle = rawConnection(loom.url);
    idle.socket.write(`GET /healthz HTTP/1.1\r\nHost: loom\r\n\r\n`);
    const closedAfter = await within(idle.closed, 5_000);
    expect(idle.received()).toMatch(/^HTTP\/1\.1 200 /);
    // 0.5 s, and the second Node adds so a client that sends at the last moment is not cut.
    expect(closedAfter).not.toBe("still open");
    expect(closedAfter).toBeLessThan(3_000);
  });

  it("cuts an upload whose body stops arriving after HTTP_BODY_IDLE_TIMEOUT_MS, and stores nothing", async () => {
    const url = await uploadUrl(api, "stalled.bin");
    const { pathname } = new URL(url);
    const stalled = rawConnection(loom.url);
    stalled.socket.write(
      `PUT ${pathname} HTTP/1.1\r\nHost: loom\r\nContent-Type: application/octet-stream\r\nContent-Length: 1000\r\n\r\n${"x".repeat(100)}`,
    );
    const closedAfter = await within(stalled.closed, 5_000);
    expect(closedAfter).not.toBe("still open");
    expect(closedAfter).toBeLessThan(3_000);
    expect((await fetch(url)).status).toBe(404); // no bytes were stored
  });

  it("lets an upload that keeps arriving take longer than every timeout", { timeout: 20_000 }, async () => {
    const url = await uploadUrl(api, "slow.bin");
    const chunks = 15; // one every 200 ms: 3 s in all
    const answered = new Promise<number>((resolve, reject) => {
      const req = request(
        url,
        {
          method: "PUT",
          agent: false,
          headers: { "content-type": "application/octet-stream", "content-length": String(chunks * 10) },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode!);
        },
      );
      req.on("error", reject);
      let sent = 0;
      const next = () => {
        req.write("0123456789");
        if (++sent < chunks) setTimeout(next, 200);
        else req.end();
      };
      next();
    });
    expect(await answered).toBe(200);
    const bytes = await fetch(url).then((r) => r.text());
    expect(bytes).toBe("0123456789".repeat(chunks));
  });

  it("waits as long as an answer takes to begin, and streams as long as it lasts", { timeout: 30_000 }, async () => {
    // A reply that begins after 3 s: the request was in long before, nothing is stalled.
    model.reply((request, res) => void setTimeout(() => answer("late but here")(request, res), 3_000));
    const late = await api.post("/chat/messages", {
      messages: [
        {
          type: "Message",
          role: "user",
          content: [
            {
              type: "TextMessageContent",
              artifact: { type: "TextArtifact", id: "a", reference: null, meta: {}, name: "a", value: "Hi" },
            },
          ],
          usage: { type: "Message.Usage", input_tokens: null, output_tokens: null },
        },
      ],
      tools: [],
      output_schema: null,
      driver_configuration: {},
    });
    expect(late.status).toBe(201);
    expect(JSON.stringify(late.body)).toContain("late but here");

    // A run streamed over SSE for 3 s.
    model.reply(trickle(Array.from({ length: 10 }, (_, i) => `w${i}`).join(" "), 300));
    const assistantId = (await api.post("/assistants", { name: "slow", input: "Talk" })).body.assistant_id as string;
    const runId = (await api.post(`/assistants/${assistantId}/runs`, { stream: true })).body.assistant_run_id as string;
    const sse = await openSse(`${loom.url}/assistant-runs/${runId}/events/stream`, { authorization: `Bearer ${key}` });
    await sse.ended;
    const types = sse.events.map((e) => JSON.parse(e.data).type as string);
    expect(types.filter((t) => t === "TextChunkEvent")).toHaveLength(10);
    expect(types.at(-1)).toBe("AssistantRunSucceeded");
  });
});
