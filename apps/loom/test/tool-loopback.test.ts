import { type AllInOne, startAllInOne } from "@loom/test-stacks/all-in-one";
import { apiClient } from "@loom/testing/http";
import { type McpTestServer, startMcpServer } from "@loom/testing/mcp-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The all-in-one allows loopback by default: a tool server on the same machine is its common case (the split
 * deployment refuses it unless TOOL_ALLOWED_HOSTS lists it: apps/gateway/test/tool-invoke.http.test.ts).
 */
describe("the all-in-one's tools", () => {
  let loom: AllInOne | undefined;
  let mcp: McpTestServer;
  const key = "loom_tool-loopback-0123456789abcdefghijklmnopqrstuv";

  beforeAll(async () => {
    mcp = await startMcpServer();
    loom = await startAllInOne({ PORT: "0", BOOTSTRAP_API_KEY: key });
  }, 60_000);
  afterAll(async () => {
    await loom?.stop("SIGKILL");
    await mcp?.close();
  });

  it("reach an MCP server on loopback without TOOL_ALLOWED_HOSTS, and a caller's cancel reaches it", async () => {
    const api = apiClient(loom!.url, key);
    const created = await api.post("/api/tools", {
      name: "local",
      server: { url: mcp.url, transport: "mcp", headers: {} },
    });
    expect(created.status).toBe(201);
    const toolId = created.body.tool_id;
    const doc = await api.get(`/api/tools/${toolId}/openapi`);
    expect(doc.status).toBe(200);
    expect(Object.keys(doc.body.paths)).toContain("/activities/add");
    const answer = await api.post(`/api/tools/${toolId}/activities/add`, { a: 20, b: 22 });
    expect(answer.body).toMatchObject({ type: "TextArtifact", value: "42" });

    // In process too, a client that goes away aborts the call: the MCP server sees it.
    const started = mcp.hangStarted();
    const aborted = mcp.hangAborted();
    const client = new AbortController();
    const request = fetch(new URL(`/api/tools/${toolId}/activities/hang`, loom!.url), {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: "{}",
      signal: client.signal,
    }).catch(() => undefined);
    await started;
    client.abort();
    await request;
    await aborted;
  });
});
