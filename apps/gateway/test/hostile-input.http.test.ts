import { request } from "node:http";
import { connect } from "node:net";
import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { maxJsonDepth } from "../src/validation.ts";
import { expectError } from "./expect-error.ts";

/** JSON nested `depth` levels: objects and arrays in turn around a number. */
function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { a: value };
  return value;
}

/** The same as JSON text, built without recursion (JSON.stringify overflows far sooner than a parser may). */
function nestedText(depth: number): string {
  let open = "";
  let close = "";
  for (let i = depth - 1; i >= 0; i--) {
    open += i % 2 ? "[" : '{"a":';
    close = (i % 2 ? "]" : "}") + close;
  }
  return `${open}1${close}`;
}

/** A request by node:http, which (unlike fetch) may send any method, TRACE included. */
function rawRequest(url: string, method: string, headers: Record<string, string>) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>(
    (resolve, reject) => {
      const req = request(url, { method, headers }, (res) => {
        let body = "";
        res.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      });
      req.on("error", reject).end();
    },
  );
}

/**
 * Input an attacker or a careless client sends gets a 4xx in the error shape
 * and changes nothing (issue #12, item 1). Over HTTP, with the services
 * behind the gateway on their own HTTP servers, as in production.
 */
describe("hostile input", () => {
  let stack: TestStack;
  let admin: ApiClient;
  let me: string;

  beforeAll(async () => {
    stack = await startStack("sqlite");
    admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
    me = (await admin.get("/users")).body.users[0].user_id;
  });
  afterAll(() => stack?.close());

  describe("free-form JSON", () => {
    it(`refuses an event payload nested deeper than ${maxJsonDepth} levels with 400 at its path, writing nothing`, async () => {
      const runId = crypto.randomUUID();
      for (const depth of [maxJsonDepth + 1, 99, 100_000]) {
        const body = expectError(
          await admin.post(
            `/structure-runs/${runId}/events`,
            `{"events":[{"type":"ok","timestamp":1,"payload":{}},{"type":"deep","timestamp":2,"payload":${nestedText(depth)}}]}`,
          ),
          400,
          "ValidationError",
        );
        expect(body.errors).toEqual([
          { path: "body.events[1].payload", message: `must be nested at most ${maxJsonDepth} levels deep` },
        ]);
      }
      expectError(await admin.get(`/structure-runs/${runId}/events`), 404, "NotFound");
    });

    it(`stores and returns a payload nested exactly ${maxJsonDepth} levels`, async () => {
      expect(JSON.parse(nestedText(maxJsonDepth))).toEqual(nested(maxJsonDepth));
      const runId = crypto.randomUUID();
      expect(
        (
          await admin.post(`/structure-runs/${runId}/events`, [
            { type: "deep", timestamp: 1, payload: nested(maxJsonDepth) },
          ])
        ).status,
      ).toBe(202);
      const list = await admin.get(`/structure-runs/${runId}/events`);
      expect(list.body.events[0].payload).toEqual(nested(maxJsonDepth));
    });
  });

  describe("bodies", () => {
    it("answers a chunked body over the limit with 413 and closes the connection, so nothing is read from the rest", async () => {
      const { hostname, port } = new URL(stack.gatewayUrl);
      const socket = connect(Number(port), hostname);
      let received = "";
      socket.setEncoding("latin1").on("data", (chunk: string) => (received += chunk));
      socket.on("error", () => {}); // the server may close while we still write
      const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
      socket.write(
        `POST /users/${me}/api-keys HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${stack.bootstrapKey}\r\n` +
          "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n",
      );
      const chunk = Buffer.alloc(64 * 1024, "a");
      socket.write(`${(chunk.length + 10).toString(16)}\r\n{"name":"x${chunk.toString()}\r\n`);
      for (let i = 0; i < 24 && !socket.destroyed; i++)
        socket.write(`${chunk.length.toString(16)}\r\n${chunk.toString()}\r\n`);
      await closed; // before the fix the connection stayed open: this waited until the test timed out
      expect(received).toMatch(/^HTTP\/1\.1 413 /);
      expect(received.toLowerCase()).toContain("connection: close");
      expect((await admin.get(`/users/${me}/api-keys`)).body.api_keys).toHaveLength(0);
    });

    it("refuses a body that is not UTF-8 with 400, writing nothing", async () => {
      const bytes = Buffer.concat([Buffer.from('{"name":"caf'), Buffer.from([0xe9]), Buffer.from('"}')]); // Latin-1 é
      const res = await fetch(new URL("/assistants", stack.gatewayUrl), {
        method: "POST",
        headers: { authorization: `Bearer ${stack.bootstrapKey}`, "content-type": "application/json" },
        body: bytes,
      });
      const body = expectError(
        { status: res.status, headers: res.headers, body: await res.json() },
        400,
        "ValidationError",
      );
      expect(body.errors).toEqual([{ path: "body", message: "must be UTF-8 text" }]);
      expect((await admin.get("/assistants")).body.assistants).toHaveLength(0);
    });

    it("refuses a lone UTF-16 surrogate escaped in a JSON string with 400, as bytes that are not UTF-8, writing nothing", async () => {
      // JSON allows the escape; the string it makes is not Unicode text, and stored as UTF-8 it would become U+FFFD.
      for (const name of ['"a\\ud800"', '"\\udfffb"', '"x\\uDE00\\uD83D"']) {
        const res = await admin.post("/assistants", `{"name":${name}}`);
        expect(expectError(res, 400, "ValidationError").errors).toEqual([
          { path: "body.name", message: "must be Unicode text: holds a lone UTF-16 surrogate" },
        ]);
      }
      // In free-form JSON too, in a value or in a key, at its path.
      const runId = crypto.randomUUID();
      const inValue = await admin.post(
        `/structure-runs/${runId}/events`,
        '[{"type":"Open","timestamp":1,"payload":{"tags":["ok","\\ud83d"]}}]',
      );
      expect(expectError(inValue, 400, "ValidationError").errors[0]!.path).toBe("body[0].payload.tags[1]");
      const inKey = await admin.post(
        `/structure-runs/${runId}/events`,
        '[{"type":"Open","timestamp":1,"payload":{"\\udc00":1}}]',
      );
      expect(expectError(inKey, 400, "ValidationError").errors[0]!.path).toBe("body[0].payload");
      expect((await admin.get(`/structure-runs/${runId}/events`)).body.events ?? []).toHaveLength(0);
      expect((await admin.get("/assistants")).body.assistants).toHaveLength(0);
      // A surrogate pair, escaped, is one character: accepted as it is.
      const paired = await admin.post("/assistants", '{"name":"smile \\ud83d\\ude00"}');
      expect(paired.status).toBe(201);
      expect(paired.body.name).toBe("smile \u{1F600}");
      expect((await admin.delete(`/assistants/${paired.body.assistant_id}`)).status).toBe(204);
    });

    it("reads a JSON body whatever its Content-Type says (curl -d sends a form type)", async () => {
      const res = await admin.post("/threads", '{"name":"from curl"}', {
        "content-type": "application/x-www-form-urlencoded",
      });
      expect(res.status).toBe(201);
      expect(res.body.name).toBe("from curl");
    });
  });

  describe("names", () => {
    it.each([
      ["NUL", "a\u0000b"],
      ["escape sequence", "\u001b[31mred"],
      ["newline", "two\nlines"],
      ["DEL", "a\u007f"],
      ["C1 control", "a\u0085b"],
    ])("refuses a %s in API key, assistant and thread names with 400, writing nothing", async (_, name) => {
      for (const [path, list, field] of [
        [`/users/${me}/api-keys`, `/users/${me}/api-keys`, "api_keys"],
        ["/assistants", "/assistants", "assistants"],
        ["/threads", "/threads", "threads"],
      ] as const) {
        const before = (await admin.get(list)).body.pagination.total_count;
        const body = expectError(await admin.post(path, { name }), 400, "ValidationError");
        expect(body.errors).toEqual([{ path: "body.name", message: "must not contain control characters" }]);
        expect((await admin.get(list)).body[field]).toHaveLength(before);
      }
    });

    it("still takes other characters, and newlines in an assistant's description", async () => {
      const res = await admin.post("/assistants", { name: "naïve 🧵 ünïcode", description: "line one\nline two" });
      expect(res.status).toBe(201);
      expect(res.body.description).toBe("line one\nline two");
    });
  });

  describe("methods", () => {
    it("answers a known path's other methods with 405 and Allow (RFC 9110), also methods the router does not know", async () => {
      for (const method of ["PUT", "DELETE", "TRACE", "QUERY"]) {
        const res = await rawRequest(`${stack.gatewayUrl}/users`, method, {
          authorization: `Bearer ${stack.bootstrapKey}`,
        });
        expect(res.status, method).toBe(405);
        expect(String(res.headers.allow).split(", ").sort()).toEqual(["GET", "HEAD"]);
        expect(JSON.parse(res.body).type).toBe("MethodNotAllowed");
      }
      const keys = await rawRequest(`${stack.gatewayUrl}/users/${me}/api-keys`, "PATCH", {
        authorization: `Bearer ${stack.bootstrapKey}`,
      });
      expect(String(keys.headers.allow).split(", ").sort()).toEqual(["GET", "HEAD", "POST"]);
    });

    it("answers OPTIONS on a known path with 204 and Allow; unknown paths stay 404", async () => {
      const options = await rawRequest(`${stack.gatewayUrl}/assistants`, "OPTIONS", {
        authorization: `Bearer ${stack.bootstrapKey}`,
      });
      expect(options.status).toBe(204);
      expect(String(options.headers.allow).split(", ").sort()).toEqual(["GET", "HEAD", "POST"]);
      const unknown = await rawRequest(`${stack.gatewayUrl}/nowhere`, "TRACE", {
        authorization: `Bearer ${stack.bootstrapKey}`,
      });
      expect(unknown.status).toBe(404);
    });
  });

  describe("query and header bounds", () => {
    it("gives Last-Event-ID the bounds of offset: a start in 0..2^53-1, 400 beyond", async () => {
      const runId = crypto.randomUUID();
      await admin.post(`/structure-runs/${runId}/events`, [{ type: "StructureRunCompleted", timestamp: 1 }]);
      const stream = (headers: Record<string, string>, query = "") =>
        admin.get(`/structure-runs/${runId}/events/stream${query}`, headers);
      const max = Number.MAX_SAFE_INTEGER;
      expectError(await stream({}, `?offset=${max + 1}`), 400, "ValidationError");
      for (const id of [String(max), "99999999999999999999", "1".repeat(400), "-1", "1e3"]) {
        const body = expectError(await stream({ "Last-Event-ID": id }), 400, "ValidationError");
        expect(body.errors[0]?.path).toBe("header.Last-Event-ID");
      }
      // The largest start each way is accepted: an empty stream that ends after the log's terminal event.
      for (const res of [
        await fetch(new URL(`/structure-runs/${runId}/events/stream?offset=${max}`, stack.gatewayUrl), {
          headers: { authorization: `Bearer ${stack.bootstrapKey}` },
        }),
        await fetch(new URL(`/structure-runs/${runId}/events/stream`, stack.gatewayUrl), {
          headers: { authorization: `Bearer ${stack.bootstrapKey}`, "Last-Event-ID": String(max - 1) },
        }),
      ]) {
        expect(res.status).toBe(200);
        expect(await res.text()).not.toContain("data:");
      }
    });

    it("answers status= with no status in it with 400", async () => {
      const assistant = (await admin.post("/assistants", { name: "status filter" })).body.assistant_id;
      for (const query of ["status=", "status=,", "status=%20,%20", "status=&status="]) {
        const body = expectError(await admin.get(`/assistants/${assistant}/runs?${query}`), 400, "ValidationError");
        expect(body.errors[0]?.path).toBe("query.status");
      }
      expect((await admin.get(`/assistants/${assistant}/runs?status=QUEUED,&status=RUNNING`)).status).toBe(200);
    });
  });
});
