import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { apiClient } from "@loom/testing/http";
import { mcpProtocolVersion } from "@loom/testing/mcp-server";
import { freePort, repoRoot, startProcess, startProgram, stopProcess } from "@loom/testing/processes";
import { type LoadResult, load, printTable } from "./load.ts";

/** A `tools/call` of `add` as an MCP client POSTs it, to a stateless server that needs no initialize first. */
const directBody = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "tools/call",
  params: { name: "add", arguments: { a: 1, b: 2 } },
});
const directHeaders = {
  accept: "application/json, text/event-stream",
  "content-type": "application/json",
  "mcp-protocol-version": mcpProtocolVersion,
};

/**
 * Issue 34: `POST /api/tools/{id}/activities/add` on the all-in-one (a tool
 * backed by the repo's MCP test server, in its own process on loopback)
 * against the same `tools/call` POSTed straight to that server, in one run:
 * the same connections, `rounds` rounds alternating which goes first. Goal:
 * Loom at ≥ 50% of the direct requests/s.
 */
export async function benchToolActivities(options: { seconds: number; connections: number; rounds: number }) {
  const key = `loom_bench-${randomBytes(24).toString("base64url")}`;
  const mcpPort = await freePort();
  const mcpUrl = `http://127.0.0.1:${mcpPort}/mcp`;
  const callDirect = () => fetch(mcpUrl, { method: "POST", headers: directHeaders, body: directBody });
  const mcp = await startProgram(
    process.execPath,
    [join(repoRoot, "bench/mcp-server.ts"), String(mcpPort)],
    () =>
      callDirect().then(
        (r) => r.ok,
        () => false,
      ),
    { stderr: "inherit" },
  );
  const port = await freePort();
  const loom = await startProcess(
    "apps/loom/src/main.ts",
    { PORT: String(port), BOOTSTRAP_API_KEY: key },
    `http://127.0.0.1:${port}/healthz`,
  );
  try {
    const api = apiClient(`http://127.0.0.1:${port}`, key);
    const tool = await api.post("/tools", { name: "Bench", server: { url: mcpUrl, transport: "mcp" } });
    if (tool.status !== 201) throw new Error(`CreateTool answered ${tool.status}: ${JSON.stringify(tool.body)}`);
    const activityUrl = `http://127.0.0.1:${port}/api/tools/${tool.body.tool_id}/activities/add`;
    const sample = await api.post(`/api/tools/${tool.body.tool_id}/activities/add`, { a: 1, b: 2 });
    if (sample.status !== 200 || sample.body?.value !== "3")
      throw new Error(`the activity answered ${sample.status}: ${JSON.stringify(sample.body)}`);
    const direct = await callDirect();
    if (!direct.ok || !(await direct.text()).includes('"text":"3"')) throw new Error("the MCP server did not add");

    const kinds = [
      {
        name: "direct" as const,
        run: () =>
          load("direct", mcpUrl, directHeaders, options.seconds, options.connections, 1, {
            method: "POST",
            body: directBody,
          }),
      },
      {
        name: "loom" as const,
        run: () =>
          load(
            "loom",
            activityUrl,
            { authorization: `Bearer ${key}`, "content-type": "application/json" },
            options.seconds,
            options.connections,
            1,
            { method: "POST", body: JSON.stringify({ a: 1, b: 2 }) },
          ),
      },
    ];
    const results = { direct: [] as LoadResult[], loom: [] as LoadResult[] };
    for (let round = 0; round < options.rounds; round++)
      for (const kind of round % 2 === 0 ? kinds : [...kinds].reverse()) results[kind.name].push(await kind.run());

    const mean = (rs: LoadResult[], pick: (r: LoadResult) => number) => rs.reduce((a, r) => a + pick(r), 0) / rs.length;
    const row = (name: string, rs: LoadResult[]) => ({
      path: name,
      connections: options.connections,
      "req/s": Math.round(mean(rs, (r) => r.requestsPerSecond)),
      "p50 ms": Math.round(mean(rs, (r) => r.p50)),
      "p99 ms": Math.round(mean(rs, (r) => r.p99)),
      "non-2xx": rs.reduce((a, r) => a + r.non2xx, 0),
      errors: rs.reduce((a, r) => a + r.errors, 0),
    });
    const perRound = results.loom
      .map((r, i) => ((100 * r.requestsPerSecond) / results.direct[i]!.requestsPerSecond).toFixed(0))
      .join("/");
    const ratio =
      (100 * mean(results.loom, (r) => r.requestsPerSecond)) / mean(results.direct, (r) => r.requestsPerSecond);
    printTable(
      `Tool activities: one MCP tools/call (add) per request, mean of ${options.rounds} rounds of ${options.seconds} s`,
      [
        { ...row("MCP server directly: POST tools/call (baseline)", results.direct), "vs direct": "" },
        {
          ...row("all-in-one: POST /api/tools/{id}/activities/add", results.loom),
          "vs direct": `${ratio.toFixed(1)}% (rounds ${perRound}; goal ≥ 50%)`,
        },
      ],
    );
  } finally {
    await stopProcess(loom);
    await stopProcess(mcp);
  }
}
