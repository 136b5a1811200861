import { randomBytes } from "node:crypto";
import { answer, callTools, startFakeOpenAI } from "@loom/testing/fake-openai";
import { apiClient } from "@loom/testing/http";
import { type McpExchange, startMcpServer } from "@loom/testing/mcp-server";
import { freePort, startProcess, stopProcess } from "@loom/testing/processes";
import { percentile, printTable } from "./load.ts";
import { driveRuns, runEnv } from "./runs-throughput.ts";

/** One tool call's four moments on the bench's clock (`performance.now()`). */
interface CallTimes {
  /** The model's answer asking for the call, fully sent. */
  modelAsked?: number;
  /** The call's `tools/call` arrived at the MCP server. */
  mcpArrived?: number;
  /** The MCP server's answer, fully sent. */
  mcpAnswered?: number;
  /** The model's next request, carrying the call's result, arrived. */
  modelResumed?: number;
  /** MCP requests (POSTs) that arrived between the model's ask and the `tools/call`: the call's handshake. */
  handshake: string[];
  /** When the first of them arrived, and how long the server took to answer them all. */
  handshakeArrived?: number;
  handshakeServerMs: number;
}

/**
 * Issue 34: Loom's own time per tool call in a run, measured from outside
 * with one clock. A scripted OpenAI-compatible model and the repo's MCP test
 * server both run in this process; each run's model asks for one `add` call
 * (its `a` names the call), then answers. Two gaps per call: the model's
 * tool-call answer sent → the `tools/call` request at the MCP server, and the
 * MCP answer sent → the model's next request. The all-in-one runs the loop;
 * runs are created and polled through its API at each of `clients` levels
 * for `seconds`. Goal: p50 ≤ 5 ms for each gap.
 */
export async function benchToolCallLatency(options: { seconds: number; clients: number[] }) {
  const calls = new Map<string, CallTimes>();
  const open: CallTimes[] = []; // calls asked for and not yet at the MCP server: whose handshake a POST is
  let next = 0;
  const model = await startFakeOpenAI();
  model.reply((request, res) => {
    const result = request.body.messages.find((m: { role: string }) => m.role === "tool");
    if (result) {
      const times = calls.get(result.tool_call_id);
      if (times) times.modelResumed = request.arrivedAt;
      answer("The sum is known.")(request, res);
      return;
    }
    const id = `call_${next++}`;
    const times: CallTimes = { handshake: [], handshakeServerMs: 0 };
    calls.set(id, times);
    res.once("finish", () => {
      times.modelAsked = performance.now();
      open.push(times);
    });
    callTools([{ id, name: "Bench_add", arguments: { a: Number(id.slice(5)), b: 1 } }])(request, res);
  });
  const observe = ({ message, arrivedAt, answeredAt }: McpExchange) => {
    if (message.method !== "tools/call") {
      // With one client, a POST while a call is open is that call's; with several, it could be another run's listing.
      for (const times of open) {
        times.handshake.push(message.method);
        times.handshakeArrived ??= arrivedAt;
        times.handshakeServerMs += answeredAt - arrivedAt;
      }
      return;
    }
    const times = calls.get(`call_${message.params.arguments.a}`);
    if (!times) return;
    times.mcpArrived = arrivedAt;
    times.mcpAnswered = answeredAt;
    open.splice(open.indexOf(times), 1);
  };
  const mcp = await startMcpServer({ record: false, observe });
  const key = `loom_bench-${randomBytes(24).toString("base64url")}`;
  const port = await freePort();
  const loom = await startProcess(
    "apps/loom/src/main.ts",
    {
      PORT: String(port),
      BOOTSTRAP_API_KEY: key,
      ...runEnv,
      DEFAULT_MODEL: "openai-compatible:fake-model",
      OPENAI_COMPATIBLE_BASE_URL: model.baseUrl,
    },
    `http://127.0.0.1:${port}/healthz`,
  );
  try {
    const api = apiClient(`http://127.0.0.1:${port}`, key);
    const tool = await api.post("/tools", { name: "Bench", server: { url: mcp.url, transport: "mcp" } });
    if (tool.status !== 201) throw new Error(`CreateTool answered ${tool.status}: ${JSON.stringify(tool.body)}`);
    const assistant = (await api.post("/assistants", { name: "bench-acting", tool_ids: [tool.body.tool_id] })).body
      .assistant_id as string;
    await driveRuns(api, assistant, 1, 2); // warm-up, not counted
    const rows: Array<Record<string, string | number>> = [];
    let failed = 0;
    for (const clients of options.clients) {
      calls.clear();
      open.splice(0);
      model.requests.splice(0);
      const runs = await driveRuns(api, assistant, clients, options.seconds);
      failed += runs.failed + runs.unfinished;
      const done = [...calls.values()].filter(
        (t) => t.modelAsked && t.mcpArrived && t.mcpAnswered && t.modelResumed,
      ) as Required<CallTimes>[];
      const toMcp = done.map((t) => t.mcpArrived - t.modelAsked).sort((a, b) => a - b);
      const toModel = done.map((t) => t.modelResumed - t.mcpAnswered).sort((a, b) => a - b);
      const ms = (x: number) => Math.round(x * 10) / 10;
      const p50 = (xs: number[]) =>
        ms(
          percentile(
            [...xs].sort((a, b) => a - b),
            50,
          ),
        );
      rows.push({
        clients,
        calls: done.length,
        "runs/s": ms(runs.runsPerSecond),
        "call → MCP p50 ms": ms(percentile(toMcp, 50)),
        "call → MCP p99 ms": ms(percentile(toMcp, 99)),
        "MCP → model p50 ms": ms(percentile(toModel, 50)),
        "MCP → model p99 ms": ms(percentile(toModel, 99)),
        // One client, where each POST is the call's own: the MCP requests Loom sends before its tools/call, the time
        // before the first, and the server's own time answering them (its part of the first gap, not Loom's).
        "MCP POSTs before tools/call": clients === 1 ? (done[0]?.handshake.join(", ") ?? "") : "",
        "call → first MCP POST p50 ms":
          clients === 1 ? p50(done.map((t) => (t.handshakeArrived ?? t.mcpArrived) - t.modelAsked)) : "",
        "MCP server answering them p50 ms": clients === 1 ? p50(done.map((t) => t.handshakeServerMs)) : "",
      });
    }
    printTable(
      `Loom's time per tool call (all-in-one, scripted OpenAI-compatible model and MCP test server in the bench process), ${options.seconds} s per level; goal p50 ≤ 5 ms`,
      rows,
    );
    if (failed > 0) throw new Error(`${failed} runs did not succeed`);
  } finally {
    await stopProcess(loom);
    await mcp.close();
    await model.close();
  }
}
