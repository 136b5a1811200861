import { randomBytes } from "node:crypto";
import { answer, callTools, type Reply, startFakeOpenAI } from "@loom/testing/fake-openai";
import { apiClient } from "@loom/testing/http";
import { startMcpServer } from "@loom/testing/mcp-server";
import { freePort, startProcess, stopProcess } from "@loom/testing/processes";
import { printTable } from "./load.ts";

/**
 * Issue 34: Loom's added latency per tool call in a run, on the all-in-one
 * process (SQLite). A scripted OpenAI-compatible model calls the tool `add`
 * of a real MCP server, then answers; both servers live in this process, so
 * one clock times both legs: the model's tool call sent (its response's last
 * byte) → the MCP server's `tools/call` handler, and that handler (which
 * answers at once) → the next model request's arrival. What lies between is
 * Loom's: reading the model's answer, the run's events, the RPC to the tools
 * service, the MCP client's handshake and call; then the result, the events
 * and the next model request. Runs go one at a time, so the figures are
 * latencies, not a queue.
 */
export async function benchToolCalls(options: { runs: number }): Promise<void> {
  const mcp = await startMcpServer();
  const model = await startFakeOpenAI();
  /** Per run: [tool call sent, next model request arrived]. */
  const marks: Array<{ callSent?: number; nextRequest?: number }> = [];
  const script: Reply = (request, res) => {
    const hasResult = (request.body.messages as Array<{ role: string }>).some((m) => m.role === "tool");
    if (hasResult) {
      marks.at(-1)!.nextRequest = performance.now();
      return answer("The sum is 42.")(request, res);
    }
    const mark: { callSent?: number } = {};
    marks.push(mark);
    res.on("finish", () => (mark.callSent = performance.now()));
    const add = (request.body.tools as Array<{ function: { name: string } }>).find((t) =>
      t.function.name.endsWith("_add"),
    );
    return callTools([{ id: "call_add", name: add!.function.name, arguments: { a: 19, b: 23 } }])(request, res);
  };
  model.reply(script);
  const key = `loom_bench-${randomBytes(24).toString("base64url")}`;
  const port = await freePort();
  const loom = await startProcess(
    "apps/loom/src/main.ts",
    {
      PORT: String(port),
      BOOTSTRAP_API_KEY: key,
      DEFAULT_MODEL: "openai-compatible:scripted",
      OPENAI_COMPATIBLE_BASE_URL: model.baseUrl,
    },
    `http://127.0.0.1:${port}/healthz`,
  );
  try {
    const api = apiClient(`http://127.0.0.1:${port}`, key);
    const tool = (await api.post("/tools", { name: "Calculator", server: { url: mcp.url, transport: "mcp" } })).body;
    const assistant = (await api.post("/assistants", { name: "bench-tools", tool_ids: [tool.tool_id] })).body;
    const runOnce = async () => {
      const id = (await api.post(`/assistants/${assistant.assistant_id}/runs`, { input: "19 + 23?" })).body
        .assistant_run_id;
      for (;;) {
        const run = (await api.get(`/assistant-runs/${id}`)).body;
        if (run.status === "SUCCEEDED") return;
        if (["FAILED", "ERROR", "CANCELLED"].includes(run.status)) throw new Error(`run ${id} ended ${run.status}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    };
    for (let i = 0; i < 20; i++) await runOnce(); // warm-up, not counted
    marks.length = 0;
    mcp.calls.length = 0;
    for (let i = 0; i < options.runs; i++) await runOnce();
    const toServer = marks.map((m, i) => mcp.calls[i]!.at - m.callSent!);
    const toModel = marks.map((m, i) => m.nextRequest! - mcp.calls[i]!.at);
    const row = (leg: string, ms: number[]) => ({ leg, runs: ms.length, "p50 ms": q(ms, 0.5), "p99 ms": q(ms, 0.99) });
    printTable(`Loom's added latency per tool call (all-in-one, SQLite; ${options.runs} runs, one at a time)`, [
      row("model's tool call sent → MCP tools/call received", toServer),
      row("MCP answer → next model request received", toModel),
    ]);
  } finally {
    await stopProcess(loom);
    await Promise.all([mcp.close(), model.close()]);
  }
}

/** The q-quantile of `values`, in ms to a tenth. */
function q(values: number[], quantile: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(quantile * sorted.length))]! * 10) / 10;
}
