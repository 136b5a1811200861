import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { type GriptapeToolServer, startGriptapeToolServer } from "@loom/testing/griptape-tool-server";
import type { ApiClient } from "@loom/testing/http";
import { type McpTestServer, mcpImage, mcpJsonResult, startMcpServer } from "@loom/testing/mcp-server";
import { storeKinds } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  artifactSchema,
  toolOpenApiErrorSchema,
  toolOpenApiSchema,
  toolRunListSchema,
  toolRunLogsSchema,
  toolRunSchema,
} from "../src/schemas.ts";
import { expectError } from "./expect-error.ts";
import { organizationClients } from "./organization-clients.ts";

const uuid = () => crypto.randomUUID();

/** griptape's to_dict key order for each artifact (an extra key makes griptape's from_dict raise). */
const artifactKeys = ["type", "id", "reference", "meta", "name", "value"];

/** A small time limit per call, so a hanging tool is bounded within the test. */
const callTimeoutMs = 1500;
const maxResponseBytes = 64 * 1024;

/** A name the injected resolver maps to a private address, as a DNS answer aimed at the internal network would. */
const privateName = "tools.attacker.example";

describe.each(storeKinds("tool invoke over HTTP"))("tool invoke over HTTP (%s store)", (store) => {
  let stack: TestStack;
  let admin: ApiClient;
  let stranger: ApiClient;
  let mcp: McpTestServer;
  let legacy: McpTestServer;
  let griptape: GriptapeToolServer;
  let mcpToolId: string;

  beforeAll(async () => {
    [mcp, legacy, griptape] = await Promise.all([
      startMcpServer(),
      startMcpServer({ transport: "legacy" }),
      startGriptapeToolServer(),
    ]);
    stack = await startStack(store, {
      tools: {
        TOOL_ALLOWED_HOSTS: "127.0.0.1",
        TOOL_CALL_TIMEOUT_MS: callTimeoutMs,
        TOOL_MAX_RESPONSE_BYTES: maxResponseBytes,
      },
      inject: {
        tools: {
          resolve: async (name: string) =>
            name === privateName ? [{ address: "10.1.2.3", family: 4 }] : [{ address: "127.0.0.1", family: 4 }],
        },
      },
    });
    ({ admin, stranger } = await organizationClients(stack, `tool-invoke-stranger-${store}`));
    mcpToolId = await createTool(mcp.url, "mcp", { name: "Test Tools!", headers: { "X-Team": { value: "blue" } } });
  });
  afterAll(async () => {
    await stack?.close();
    await Promise.all([mcp?.close(), legacy?.close(), griptape?.close()]);
  });

  async function createTool(
    url: string,
    transport: "mcp" | "griptape",
    over: { name?: string; headers?: Record<string, unknown> } = {},
  ): Promise<string> {
    const res = await admin.post("/api/tools", {
      name: over.name ?? "t",
      server: { url, transport, headers: over.headers ?? {} },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.tool_id;
  }

  const invoke = (toolId: string, activity: string, input: unknown = {}) =>
    admin.post(`/api/tools/${toolId}/activities/${activity}`, input);

  /** The artifact answered, checked to hold exactly griptape's keys for its class. */
  function artifactOf(res: { status: number; body: any }, type: string, extra: string[] = []) {
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(Object.keys(res.body)).toEqual([...artifactKeys, ...extra]);
    expect(res.body.type).toBe(type);
    return artifactSchema.parse(res.body);
  }

  const latestRun = async (toolId: string) => {
    const res = await admin.get(`/api/tools/${toolId}/runs?page_size=1`);
    return toolRunSchema.parse(res.body.tool_runs[0]);
  };

  describe("GET /api/tools/{id}/openapi", () => {
    it("gives the MCP server's tools as /activities/<name> POST operations griptape can read", async () => {
      const res = await admin.get(`/api/tools/${mcpToolId}/openapi`);
      expect(res.status).toBe(200);
      const doc = toolOpenApiSchema.parse(res.body);
      expect(doc.info.title).toBe("TestTools");
      expect(Object.keys(doc.paths)).toEqual(
        ["add", "json", "image", "fail", "hang", "several", "say_hello", "huge"].map((name) => `/activities/${name}`),
      );
      const add = doc.paths["/activities/add"]!.post;
      expect(add.operationId).toBe("add");
      // griptape renders descriptions as Jinja: no `{{` is left to be rendered away.
      expect(add.description).toBe("Adds two numbers: { a } plus { b }.");
      expect(add.requestBody.content["application/json"].schema).toEqual({
        type: "object",
        properties: {
          a: { type: "number", description: "The first number" },
          b: { type: "number", description: "The second number" },
        },
        required: ["a", "b"],
      });
      expect(doc.paths["/activities/image"]!.post.requestBody.content["application/json"].schema).toEqual({
        type: "object",
        properties: {},
      });
    });

    it("reads a griptape tool server's /openapi, every property type one string", async () => {
      const toolId = await createTool(griptape.url, "griptape", { name: "Text Tool" });
      const doc = toolOpenApiSchema.parse((await admin.get(`/api/tools/${toolId}/openapi`)).body);
      expect(doc.info.title).toBe("TextTool");
      expect(Object.keys(doc.paths)).toEqual(["/activities/reverse", "/activities/fail"]);
      expect(doc.paths["/activities/reverse"]!.post.requestBody.content["application/json"].schema).toEqual({
        type: "object",
        properties: {
          text: { type: "string", description: "The text to reverse" },
          suffix: { type: "string", description: "Appended to the result" },
          times: { type: "integer" },
        },
        required: ["text"],
      });
    });

    it("lists through the older HTTP+SSE transport when the server has no streamable HTTP", async () => {
      const toolId = await createTool(legacy.url, "mcp");
      const doc = toolOpenApiSchema.parse((await admin.get(`/api/tools/${toolId}/openapi`)).body);
      expect(Object.keys(doc.paths)).toContain("/activities/add");
    });

    it("answers 200 with the error and the tool run that records it when the server cannot be reached", async () => {
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
      const { port } = closed.address() as AddressInfo;
      await new Promise((resolve) => closed.close(resolve));
      const toolId = await createTool(`http://127.0.0.1:${port}/mcp`, "mcp");
      const res = await admin.get(`/api/tools/${toolId}/openapi`);
      expect(res.status).toBe(200);
      const { error, tool_run_id } = toolOpenApiErrorSchema.parse(res.body);
      expect(error).toMatch(new RegExp(`could not reach 127\\.0\\.0\\.1:${port}`));
      const run = toolRunSchema.parse((await admin.get(`/api/tool-runs/${tool_run_id}`)).body);
      expect(run).toMatchObject({ tool_id: toolId, status: "ERROR", runtime_path: "/openapi", status_detail: error });
    });

    it("is 409 for a tool without a server and 404 for another organization's tool", async () => {
      const bare = (await admin.post("/api/tools", { name: "bare" })).body.tool_id;
      expectError(await admin.get(`/api/tools/${bare}/openapi`), 409, "Conflict");
      expectError(await stranger.get(`/api/tools/${mcpToolId}/openapi`), 404, "NotFound");
      expectError(await admin.get(`/api/tools/${uuid()}/openapi`), 404, "NotFound");
    });
  });

  describe("POST /api/tools/{id}/activities/{name}", () => {
    it("calls the activity and answers a TextArtifact, recording a SUCCEEDED tool run with its logs", async () => {
      const before = mcp.calls.length;
      const art = artifactOf(await invoke(mcpToolId, "add", { a: 2, b: 3 }), "TextArtifact");
      expect(art.value).toBe("5");
      expect(art.id).toMatch(/^[0-9a-f]{32}$/);
      expect(art).toMatchObject({ reference: null, meta: {}, name: art.id });
      const call = mcp.calls[before]!;
      expect(call).toMatchObject({ tool: "add", arguments: { a: 2, b: 3 } });
      expect(call.headers["x-team"]).toBe("blue");

      const run = await latestRun(mcpToolId);
      expect(run).toMatchObject({
        tool_id: mcpToolId,
        status: "SUCCEEDED",
        runtime_path: "/activities/add",
        input: { a: 2, b: 3 },
        output: art,
      });
      expect(run.started_at).not.toBeNull();
      expect(Date.parse(run.completed_at!)).toBeGreaterThanOrEqual(Date.parse(run.started_at!));
      const logs = toolRunLogsSchema.parse((await admin.get(`/api/tool-runs/${run.tool_run_id}/logs`)).body).logs;
      expect(logs[0]).toBe(`called add on ${mcp.url}`);
      expect(logs[1]).toMatch(/^answered in \d+ ms$/);
      // A header's value goes to the server only.
      expect(JSON.stringify({ run, logs })).not.toContain("blue");
    });

    it("answers structured content as a JsonArtifact", async () => {
      const art = artifactOf(await invoke(mcpToolId, "json", { q: "x" }), "JsonArtifact");
      expect(art.value).toEqual(mcpJsonResult);
    });

    it("answers an image as an ImageArtifact with its format and size read from the image", async () => {
      const art = artifactOf(await invoke(mcpToolId, "image"), "ImageArtifact", ["format", "width", "height"]);
      expect(art).toMatchObject({
        value: mcpImage.png.toString("base64"),
        format: "png",
        width: mcpImage.width,
        height: mcpImage.height,
      });
      expect(art.name).toMatch(/^image_artifact_\d{12}_[0-9a-f]{4}\.png$/);
    });

    it("answers several content items as a ListArtifact of their artifacts", async () => {
      const art = artifactOf(await invoke(mcpToolId, "several"), "ListArtifact", [
        "item_separator",
        "validate_uniform_types",
      ]);
      expect(art).toMatchObject({ item_separator: "\n\n", validate_uniform_types: false });
      const [text, image] = art.value as any[];
      expect(Object.keys(text)).toEqual(artifactKeys);
      expect(text).toMatchObject({ type: "TextArtifact", value: "a text" });
      expect(image).toMatchObject({ type: "ImageArtifact", format: "png", width: 3, height: 2 });
    });

    it("calls a tool whose name griptape cannot take by the activity name Loom gave it", async () => {
      expect(artifactOf(await invoke(mcpToolId, "say_hello", { name: "Ada" }), "TextArtifact").value).toBe(
        "Hello, Ada!",
      );
      expect(mcp.calls.at(-1)).toMatchObject({ tool: "say-hello", arguments: { name: "Ada" } });
    });

    it("answers a server's JSON-RPC error as an ErrorArtifact and a FAILED tool run", async () => {
      // A hand-written server (the SDK's answers a tool's failure as an isError result, never as a JSON-RPC error).
      const server = createServer(async (req, res) => {
        if (req.method !== "POST") return void res.writeHead(405).end();
        let raw = "";
        for await (const chunk of req) raw += chunk;
        const message = JSON.parse(raw) as { id?: number; method: string };
        const answer = (body: object) =>
          res
            .writeHead(200, { "content-type": "application/json" })
            .end(JSON.stringify({ jsonrpc: "2.0", id: message.id, ...body }));
        if (message.id === undefined) return void res.writeHead(202).end();
        if (message.method === "initialize")
          return answer({
            result: {
              protocolVersion: "2025-11-25",
              capabilities: { tools: {} },
              serverInfo: { name: "raw", version: "1" },
            },
          });
        if (message.method === "tools/list")
          return answer({ result: { tools: [{ name: "broken", inputSchema: { type: "object", properties: {} } }] } });
        if (message.method === "tools/call") return answer({ error: { code: -32000, message: "the backend is down" } });
        res
          .writeHead(400, { "content-type": "application/json" })
          .end(JSON.stringify({ jsonrpc: "2.0", id: message.id, error: { code: -32600, message: "unsupported" } }));
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      try {
        const toolId = await createTool(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, "mcp");
        const art = artifactOf(await invoke(toolId, "broken"), "ErrorArtifact");
        expect(art.value).toMatch(/^the MCP server answered error -32000: .*the backend is down/);
        expect(await latestRun(toolId)).toMatchObject({ status: "FAILED", status_detail: art.value });
      } finally {
        server.close();
      }
    });

    it("answers a tool's error as an ErrorArtifact and a FAILED tool run", async () => {
      const art = artifactOf(await invoke(mcpToolId, "fail"), "ErrorArtifact");
      expect(art.value).toBe("boom: the tool failed");
      expect(await latestRun(mcpToolId)).toMatchObject({ status: "FAILED", output: art });
    });

    it("bounds a hanging call by the time limit, and the MCP server sees the abort", async () => {
      const aborted = mcp.hangAborted();
      const started = Date.now();
      const art = artifactOf(await invoke(mcpToolId, "hang"), "ErrorArtifact");
      expect(Date.now() - started).toBeLessThan(callTimeoutMs + 2000);
      expect(art.value).toBe(`the tool server did not answer within ${callTimeoutMs} ms`);
      await aborted;
      expect(await latestRun(mcpToolId)).toMatchObject({ status: "ERROR", status_detail: art.value });
    });

    it("aborts the call when the HTTP client goes away: the MCP server sees it, the tool run is CANCELLED", async () => {
      const started = mcp.hangStarted();
      const aborted = mcp.hangAborted();
      const client = new AbortController();
      const request = fetch(new URL(`/api/tools/${mcpToolId}/activities/hang`, stack.gatewayUrl), {
        method: "POST",
        headers: { authorization: `Bearer ${stack.bootstrapKey}`, "content-type": "application/json" },
        body: "{}",
        signal: client.signal,
      }).catch(() => undefined);
      await started;
      const at = Date.now();
      client.abort();
      await request;
      await aborted;
      expect(Date.now() - at).toBeLessThan(callTimeoutMs);
      await expect.poll(async () => (await latestRun(mcpToolId)).status, { timeout: 5000 }).toBe("CANCELLED");
    });

    it("refuses an answer larger than the limit, well before the time limit", async () => {
      const started = Date.now();
      const art = artifactOf(await invoke(mcpToolId, "huge", { bytes: 4 * maxResponseBytes }), "ErrorArtifact");
      expect(Date.now() - started).toBeLessThan(callTimeoutMs);
      expect(art.value).toBe(`the answer from 127.0.0.1 is larger than ${maxResponseBytes} bytes`);
      expect(await latestRun(mcpToolId)).toMatchObject({ status: "ERROR", status_detail: art.value });
      // Within the limit, the same tool answers.
      expect(artifactOf(await invoke(mcpToolId, "huge", { bytes: 1000 }), "TextArtifact").value).toHaveLength(1000);
    });

    it("keeps a stateless server's handshake for the next calls, and shakes hands again when the server changed", async () => {
      const first = await startMcpServer();
      const toolId = await createTool(first.url, "mcp");
      artifactOf(await invoke(toolId, "add", { a: 1, b: 2 }), "TextArtifact");
      const before = first.requests.length;
      artifactOf(await invoke(toolId, "add", { a: 2, b: 2 }), "TextArtifact");
      // No discovery, initialize, initialized or listing, no GET stream: the call alone, on the first call's connection.
      const call = first.requests.slice(before);
      expect(call.map((r) => r.method)).toEqual(["POST"]);
      expect(call[0]?.clientPort).toBe(first.requests[before - 1]?.clientPort);
      await first.close();
      // Another server, of the older transport, at the same URL.
      const second = await startMcpServer({ transport: "legacy", port: first.port });
      try {
        expect(artifactOf(await invoke(toolId, "add", { a: 3, b: 4 }), "TextArtifact").value).toBe("7");
      } finally {
        await second.close();
      }
    });

    it("answers calls sent side by side to one server each with its own result, and calls again after one timed out", async () => {
      const server = await startMcpServer();
      try {
        const toolId = await createTool(server.url, "mcp");
        artifactOf(await invoke(toolId, "add", { a: 0, b: 0 }), "TextArtifact");
        const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => invoke(toolId, "add", { a: i, b: 100 })));
        expect(answers.map((answer) => artifactOf(answer, "TextArtifact").value)).toEqual(
          Array.from({ length: 8 }, (_, i) => String(i + 100)),
        );
        const aborted = server.hangAborted();
        artifactOf(await invoke(toolId, "hang"), "ErrorArtifact");
        await aborted;
        expect(artifactOf(await invoke(toolId, "add", { a: 1, b: 1 }), "TextArtifact").value).toBe("2");
      } finally {
        await server.close();
      }
    });

    it("calls through the older HTTP+SSE transport, a hanging call bounded there too", async () => {
      const toolId = await createTool(legacy.url, "mcp");
      expect(artifactOf(await invoke(toolId, "add", { a: 40, b: 2 }), "TextArtifact").value).toBe("42");
      const aborted = legacy.hangAborted();
      const started = Date.now();
      const art = artifactOf(await invoke(toolId, "hang"), "ErrorArtifact");
      expect(Date.now() - started).toBeLessThan(callTimeoutMs + 2000);
      expect(art.value).toBe(`the tool server did not answer within ${callTimeoutMs} ms`);
      // Its event stream closed with the call: the server's session ends and the handler is aborted.
      await aborted;
    });

    it("calls a griptape tool server's activity and passes its artifact on; its HTTP error is an ErrorArtifact", async () => {
      const toolId = await createTool(griptape.url, "griptape", { headers: { Authorization: { value: "Bearer k" } } });
      const art = artifactOf(await invoke(toolId, "reverse", { text: "abc", suffix: "!" }), "TextArtifact");
      expect(art.value).toBe("cba!");
      const received = griptape.requests.at(-1)!;
      expect(received).toMatchObject({
        method: "POST",
        path: "/activities/reverse",
        body: { text: "abc", suffix: "!" },
      });
      expect(received.headers.authorization).toBe("Bearer k");
      const failed = artifactOf(await invoke(toolId, "fail"), "ErrorArtifact");
      expect(failed.value).toMatch(/^the tool server answered HTTP 500: .*the activity broke/);
      expect(await latestRun(toolId)).toMatchObject({ status: "FAILED" });
      // The server has no such activity (its 404).
      expectError(await invoke(toolId, "nope"), 404, "NotFound");
    });

    it("clears a secret's value from a server's error that echoes it", async () => {
      const value = `sk-${uuid()}`;
      const secretId = (await admin.post("/api/secrets", { name: "echoed-token", value })).body.secret_id as string;
      const toolId = await createTool(griptape.url, "griptape", {
        headers: { Authorization: { secret_ref: secretId } },
      });
      const failed = artifactOf(await invoke(toolId, "fail"), "ErrorArtifact");
      expect(griptape.requests.at(-1)!.headers.authorization).toBe(value);
      expect(failed.value).toContain('"authorization":"[secret]"');
      const run = await latestRun(toolId);
      const logs = (await admin.get(`/api/tool-runs/${run.tool_run_id}/logs`)).body;
      expect(JSON.stringify({ failed, run, logs })).not.toContain(value);
    });

    it("sends a secret's value in its header, never in the tool run; once the secret is deleted, fails naming it, sending nothing", async () => {
      const value = `sk-${uuid()}`;
      const secret = await admin.post("/api/secrets", { name: "mcp-token", value });
      expect(secret.status).toBe(201);
      const secretId = secret.body.secret_id as string;
      const toolId = await createTool(mcp.url, "mcp", { headers: { Authorization: { secret_ref: secretId } } });
      artifactOf(await invoke(toolId, "add", { a: 1, b: 1 }), "TextArtifact");
      expect(mcp.calls.at(-1)!.headers.authorization).toBe(value);
      const run = await latestRun(toolId);
      const logs = await admin.get(`/api/tool-runs/${run.tool_run_id}/logs`);
      expect(JSON.stringify([run, logs.body])).not.toContain(value);
      expect((await admin.get(`/api/secrets/${secretId}`)).body.last_used).not.toBe(secret.body.last_used);

      expect((await admin.delete(`/api/secrets/${secretId}`)).status).toBe(204);
      const requests = mcp.requests.length;
      const art = artifactOf(await invoke(toolId, "add", { a: 1, b: 1 }), "ErrorArtifact");
      expect(art.value).toBe(`the tool's header Authorization names the secret ${secretId}, which does not exist`);
      expect(mcp.requests.length).toBe(requests);
      expect(await latestRun(toolId)).toMatchObject({ status: "FAILED", status_detail: art.value });
    });

    it("is 404 for an unknown activity, 400 for a name no activity can have, 404 across organizations", async () => {
      expectError(await invoke(mcpToolId, "nope"), 404, "NotFound");
      expectError(await invoke(mcpToolId, "not-a-name"), 400, "ValidationError");
      expectError(await stranger.post(`/api/tools/${mcpToolId}/activities/add`, { a: 1, b: 2 }), 404, "NotFound");
    });
  });

  describe("tool runs", () => {
    it("lists a tool's runs newest first, filtered by status (repeated or comma-separated), paged", async () => {
      const toolId = await createTool(mcp.url, "mcp");
      await invoke(toolId, "add", { a: 1, b: 2 });
      await invoke(toolId, "fail");
      await invoke(toolId, "add", { a: 3, b: 4 });
      const all = toolRunListSchema.parse((await admin.get(`/api/tools/${toolId}/runs`)).body);
      expect(all.tool_runs.map((r) => [r.status, r.input])).toEqual([
        ["SUCCEEDED", { a: 3, b: 4 }],
        ["FAILED", {}],
        ["SUCCEEDED", { a: 1, b: 2 }],
      ]);
      expect(all.pagination).toMatchObject({ total_count: 3 });
      const failed = (await admin.get(`/api/tools/${toolId}/runs?status=FAILED`)).body;
      expect(failed.tool_runs.map((r: any) => r.status)).toEqual(["FAILED"]);
      for (const query of ["status=FAILED&status=SUCCEEDED", "status=FAILED,SUCCEEDED"])
        expect((await admin.get(`/api/tools/${toolId}/runs?${query}`)).body.pagination.total_count).toBe(3);
      const page = (await admin.get(`/api/tools/${toolId}/runs?page=2.0&page_size=2.0`)).body;
      expect(page.tool_runs).toEqual([all.tool_runs[2]]);
      expectError(await admin.get(`/api/tools/${toolId}/runs?status=DONE`), 400, "ValidationError");
    });

    it("keeps a deleted tool's runs readable by their id; the tool's list is 404 like the tool", async () => {
      const toolId = await createTool(mcp.url, "mcp");
      await invoke(toolId, "add", { a: 1, b: 2 });
      const run = await latestRun(toolId);
      expect((await admin.delete(`/api/tools/${toolId}`)).status).toBe(204);
      expect((await admin.get(`/api/tool-runs/${run.tool_run_id}`)).body).toEqual(run);
      expectError(await admin.get(`/api/tools/${toolId}/runs`), 404, "NotFound");
    });

    it("is 404 for an unknown or another organization's tool run, its logs and its tool's runs", async () => {
      await invoke(mcpToolId, "add", { a: 1, b: 2 });
      const run = await latestRun(mcpToolId);
      expectError(await stranger.get(`/api/tool-runs/${run.tool_run_id}`), 404, "NotFound");
      expectError(await stranger.get(`/api/tool-runs/${run.tool_run_id}/logs`), 404, "NotFound");
      expectError(await stranger.get(`/api/tools/${mcpToolId}/runs`), 404, "NotFound");
      expectError(await admin.get(`/api/tool-runs/${uuid()}`), 404, "NotFound");
      expectError(await admin.get(`/api/tools/${uuid()}/runs`), 404, "NotFound");
    });
  });

  describe("the outbound network policy", () => {
    const refused = async (url: string, message: string) => {
      const toolId = await createTool(url, "mcp");
      const listed = expectError(await admin.get(`/api/tools/${toolId}/openapi`), 403, "Forbidden");
      expect(listed.errors[0]!.message).toBe(message);
      const called = expectError(await invoke(toolId, "add", { a: 1, b: 2 }), 403, "Forbidden");
      expect(called.errors[0]!.message).toBe(message);
      expect(await latestRun(toolId)).toMatchObject({ status: "FAILED", status_detail: message });
    };
    const metadata = (host: string) => `${host} is a cloud metadata address, never reachable from tools`;
    const unlessAllowed = (subject: string, kind: string) =>
      `${subject} ${kind}, not reachable from tools unless its host is allowed (TOOL_ALLOWED_HOSTS)`;

    it("refuses a tool on the cloud metadata address, in its literal, integer and IPv6 forms, when it is written", async () => {
      const before = (await admin.get("/api/tools?page_size=1")).body.pagination.total_count;
      const forms = [
        ["http://169.254.169.254/latest/meta-data/", "169.254.169.254"],
        ["http://2852039166/", "169.254.169.254"],
        ["http://[::ffff:169.254.169.254]/", "::ffff:a9fe:a9fe"],
        ["http://[fe80::1]/mcp", "fe80::1"],
      ] as const;
      for (const [url, host] of forms) {
        const server = { url, transport: "mcp", headers: {} };
        const created = expectError(
          await admin.post("/api/tools", { name: "metadata", server }),
          400,
          "ValidationError",
        );
        const message =
          host === "fe80::1" ? `${host} is a link-local address, never reachable from tools` : metadata(host);
        expect(created.errors).toEqual([{ path: "body.server.url", message }]);
        const updated = expectError(await admin.patch(`/api/tools/${mcpToolId}`, { server }), 400, "ValidationError");
        expect(updated.errors).toEqual([{ path: "body.server.url", message }]);
      }
      expect((await admin.get("/api/tools?page_size=1")).body.pagination.total_count).toBe(before);
      expect((await admin.get(`/api/tools/${mcpToolId}`)).body.server.url).toBe(mcp.url);
    });

    it("refuses a private address and a name resolving to one", async () => {
      await refused("http://10.0.0.1/mcp", unlessAllowed("10.0.0.1 is", "a private address"));
      await refused(
        `http://${privateName}:${mcp.port}/mcp`,
        unlessAllowed(`${privateName} resolves to`, "a private address"),
      );
    });

    it("refuses a redirect to a private address", async () => {
      const redirector = createServer((_req, res) => res.writeHead(307, { location: "http://10.0.0.1/mcp" }).end());
      await new Promise<void>((resolve) => redirector.listen(0, "127.0.0.1", resolve));
      try {
        const { port } = redirector.address() as AddressInfo;
        await refused(`http://127.0.0.1:${port}/mcp`, unlessAllowed("10.0.0.1 is", "a private address"));
      } finally {
        redirector.close();
      }
    });

    it("allows loopback when TOOL_ALLOWED_HOSTS lists it; the split deployment refuses it otherwise", async () => {
      artifactOf(await invoke(mcpToolId, "add", { a: 1, b: 1 }), "TextArtifact");
      const split = await startStack(store, { memoryBus: true });
      try {
        const { admin: splitAdmin } = await organizationClients(split, `tool-invoke-split-${store}`);
        const toolId = (
          await splitAdmin.post("/api/tools", {
            name: "local",
            server: { url: mcp.url, transport: "mcp", headers: {} },
          })
        ).body.tool_id;
        const res = expectError(await splitAdmin.get(`/api/tools/${toolId}/openapi`), 403, "Forbidden");
        expect(res.errors[0]!.message).toBe(unlessAllowed("127.0.0.1 is", "a loopback address"));
      } finally {
        await split.close();
      }
    });
  });
});
