import { randomBytes } from "node:crypto";
import { apiClient } from "@loom/testing/http";
import { freePort, startProcess, startProgram, stopProcess } from "@loom/testing/processes";
import { type LoadResult, load, printTable } from "./load.ts";

/**
 * Calling an MCP server's tool through Loom (`POST /api/tools/{id}/activities/add` on the all-in-one process: a
 * tool run recorded, the call through the outbound guard, the result as a griptape artifact) against the same
 * `tools/call` sent to the server directly, in one run. Goal (issue 34): through Loom ≥ 50% of direct's req/s.
 */
export async function benchToolInvoke(options: { seconds: number; connections: number }): Promise<void> {
  const mcpPort = await freePort();
  const mcpUrl = `http://127.0.0.1:${mcpPort}/mcp`;
  const mcp = await startProgram(process.execPath, ["bench/mcp-server.ts", String(mcpPort)], () =>
    fetch(mcpUrl).then(
      (r) => r.status === 405,
      () => false,
    ),
  );
  const rows: LoadResult[] = [];
  try {
    // Direct: what a client holding a connected stateless session sends per call.
    rows.push(
      await load(
        "tools/call sent to the MCP server directly (baseline)",
        mcpUrl,
        {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-11-25",
        },
        options.seconds,
        options.connections,
        1,
        {
          method: "POST",
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "tools/call",
            params: { name: "add", arguments: { a: 1, b: 2 } },
          }),
        },
      ),
    );

    const key = `loom_bench-${randomBytes(24).toString("base64url")}`;
    const loomPort = await freePort();
    const loomUrl = `http://127.0.0.1:${loomPort}`;
    const loom = await startProcess(
      "apps/loom/src/main.ts",
      { PORT: String(loomPort), BOOTSTRAP_API_KEY: key },
      `${loomUrl}/healthz`,
    );
    try {
      const api = apiClient(loomUrl, key);
      const toolId = (
        await api.post("/api/tools", { name: "bench", server: { url: mcpUrl, transport: "mcp", headers: {} } })
      ).body.tool_id as string;
      const sample = await api.post(`/api/tools/${toolId}/activities/add`, { a: 1, b: 2 });
      if (sample.body?.value !== "3") throw new Error(`the activity answered ${JSON.stringify(sample.body)}`);
      rows.push(
        await load(
          "POST /api/tools/{id}/activities/add: all-in-one process (SQLite)",
          `${loomUrl}/api/tools/${toolId}/activities/add`,
          { authorization: `Bearer ${key}`, "content-type": "application/json" },
          options.seconds,
          options.connections,
          1,
          { method: "POST", body: JSON.stringify({ a: 1, b: 2 }) },
        ),
      );
    } finally {
      await stopProcess(loom);
    }
  } finally {
    await stopProcess(mcp);
  }
  const baseline = rows[0]!.requestsPerSecond;
  printTable(
    `A tool's activity through Loom vs. tools/call sent directly — ${options.connections} connections, ${options.seconds} s each (goal: ≥ 50% of direct)`,
    rows.map((r) => ({
      target: r.name,
      "req/s": Math.round(r.requestsPerSecond),
      "p50 ms": r.p50,
      "p99 ms": r.p99,
      "vs direct": `${((100 * r.requestsPerSecond) / baseline).toFixed(1)}%`,
      "non-2xx": r.non2xx,
      errors: r.errors,
    })),
  );
  const failed = rows.filter((r) => r.non2xx > 0 || r.errors > 0);
  if (failed.length > 0) throw new Error(`requests failed in: ${failed.map((r) => r.name).join(", ")}`);
}
