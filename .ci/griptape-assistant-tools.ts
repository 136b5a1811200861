import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { answer, callTools, type Reply, startFakeOpenAI } from "@loom/testing/fake-openai";
import { apiClient } from "@loom/testing/http";
import { startMcpServer } from "@loom/testing/mcp-server";
import { freePort, startProcess, stopProcess } from "@loom/testing/processes";

/**
 * The published GriptapeCloudAssistantDriver (griptape 1.13) runs an
 * assistant with a tool against the all-in-one process: the tool is a real
 * MCP server (its `add`), the model a local OpenAI-compatible server scripted
 * to call `<tool>_add` with 19 and 23, then to answer with what the tool
 * gave back. The driver must return "The answer is 42." (.ci/compat/assistant_driver_tools.py).
 * Called by .ci/griptape-compat.ts; true when the check passed.
 */
export async function assistantWithTools(python: string): Promise<boolean> {
  const mcp = await startMcpServer();
  const model = await startFakeOpenAI();
  model.reply(callAddThenAnswer);
  const key = `loom_compat-${randomBytes(24).toString("base64url")}`;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // The all-in-one allows loopback tool servers by default (docs/decisions.md, "Outbound requests on a user's behalf").
  const loom = await startProcess(
    "apps/loom/src/main.ts",
    {
      PORT: String(port),
      BOOTSTRAP_API_KEY: key,
      DEFAULT_MODEL: "openai-compatible:scripted",
      OPENAI_COMPATIBLE_BASE_URL: model.baseUrl,
    },
    `${url}/healthz`,
  );
  try {
    const api = apiClient(url, key);
    const tool = (await api.post("/tools", { name: "Calculator", server: { url: mcp.url, transport: "mcp" } })).body;
    const assistant = (await api.post("/assistants", { name: "calculating", tool_ids: [tool.tool_id] })).body;
    // Not spawnSync: the scripted model and the MCP server answer from this process's event loop.
    const run = spawn(python, [".ci/compat/assistant_driver_tools.py"], {
      env: { PATH: process.env.PATH, LOOM_URL: url, LOOM_KEY: key, LOOM_ASSISTANT: assistant.assistant_id },
      stdio: "inherit",
    });
    const [code] = (await once(run, "exit")) as [number | null];
    return code === 0;
  } finally {
    await stopProcess(loom);
    await Promise.all([mcp.close(), model.close()]);
  }
}

/** The model's script: without a tool result yet, call the offered `…_add`; with one, answer with it. */
const callAddThenAnswer: Reply = (request, res) => {
  const result = (request.body.messages as Array<{ role: string; content: string }>).find((m) => m.role === "tool");
  if (result) return answer(`The answer is ${result.content}.`)(request, res);
  const add = (request.body.tools as Array<{ function: { name: string } }>).find((t) =>
    t.function.name.endsWith("_add"),
  );
  return callTools([{ id: "call_add", name: add?.function.name ?? "missing_add", arguments: { a: 19, b: 23 } }])(
    request,
    res,
  );
};
