import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { answer, startFakeOpenAI } from "@loom/testing/fake-openai";
import { apiClient } from "@loom/testing/http";
import { startMcpServer } from "@loom/testing/mcp-server";
import { localEmbeddingModel, needsOwnServers, startOwnEmbeddings } from "@loom/testing/own-servers";
import { freePort, startProcess, stopProcess } from "@loom/testing/processes";
import { freshS3Bucket } from "@loom/testing/s3";
import { testServers } from "@loom/testing/servers";
import { assistantWithTools } from "./griptape-assistant-tools.ts";

/**
 * The published griptape clients (PyPI) against the all-in-one process, on
 * local disk and on S3 (MinIO, when .ci/run started one): griptape's file
 * manager driver saves, loads and lists through buckets, assets and signed
 * URLs; and (once, as they keep no blobs) its prompt driver chats with
 * loom:echo, plain, streamed, and in an agent loop whose tool runs on the
 * client; its ruleset driver loads string and JSON-schema rules by alias; an
 * agent with its conversation-memory driver runs twice on one thread and a
 * fresh driver loads both runs; its observability driver exports an agent's
 * spans to a structure run; its GriptapeCloudToolTool builds its activities
 * from a Loom tool backed by a real MCP server (the repo's test server) and
 * calls them; and the generated griptape-cloud-client parses every thread,
 * message, ruleset, rule, tool, secret, knowledge base and data connector
 * operation and GetUser (a knowledge base's searches answered by a scripted
 * OpenAI-compatible model); its GriptapeCloudVectorStoreDriver queries knowledge
 * bases ingested from the bucket, without an embedding model and with the
 * local embeddings server's. Then (once) its assistant driver runs an assistant
 * whose tool is an MCP server (griptape-assistant-tools.ts).
 * Usage: node .ci/griptape-compat.ts <python with griptape and griptape-cloud-client installed>.
 */
const python = process.argv[2]!;
const stores: Array<{ name: string; env: () => Promise<{ env: Record<string, string>; cleanup(): Promise<void> }> }> = [
  {
    name: "local disk",
    env: async () => {
      const dir = await mkdtemp(join(tmpdir(), "loom-compat-"));
      return { env: { BLOB_DIR: dir }, cleanup: () => rm(dir, { recursive: true, force: true }) };
    },
  },
];
if (testServers.s3) stores.push({ name: "S3 (MinIO)", env: async () => freshS3Bucket("loom-compat") });
else console.log("(S3 run skipped: S3_TEST_ENDPOINT is not set)");

const storeIndependent = [
  ".ci/compat/prompt_driver.py",
  ".ci/compat/ruleset_driver.py",
  ".ci/compat/conversation_memory.py",
  ".ci/compat/cloud_client.py",
  ".ci/compat/observability.py",
  ".ci/compat/cloud_tool.py",
  // Needs ingest jobs (POST /knowledge-bases/{id}/knowledge-base-jobs) to fill the knowledge bases it queries.
  ".ci/compat/vector_store_driver.py",
];

// The MCP server the cloud tool check's Loom tool points at: on loopback, which the all-in-one allows by default.
// It answers from this process, so the scripts run without blocking it (no spawnSync).
const mcp = await startMcpServer();
// The local embeddings server (all-MiniLM-L6-v2), so the vector store driver's check also queries a knowledge base
// with an embedding model; without it that half is skipped, saying so.
const embeddings = needsOwnServers("griptape vector store driver with an embedding model", "embeddings")
  ? await startOwnEmbeddings()
  : undefined;
// Through the `openai` provider (its embeddings API is OpenAI's, which the server speaks), so that the
// `openai-compatible` one can be the search model: a scripted server answering a knowledge base's searches.
const embeddingModel = embeddings && `openai:${localEmbeddingModel.id}`;
const searchModel = await startFakeOpenAI();
searchModel.reply(answer("From the knowledge base: the answer [1]."));

const runPython = (script: string, env: Record<string, string>) =>
  new Promise<number | null>((resolve) =>
    spawn(python, [script], { env, stdio: "inherit" }).once("exit", (code) => resolve(code)),
  );

let failed = false;
for (const store of stores) {
  const { env, cleanup } = await store.env();
  const key = `loom_compat-${randomBytes(24).toString("base64url")}`;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const loom = await startProcess(
    "apps/loom/src/main.ts",
    {
      PORT: String(port),
      BOOTSTRAP_API_KEY: key,
      ...env,
      // A provider's address set, the all-in-one asks for DEFAULT_MODEL too: the offline echo the checks use.
      DEFAULT_MODEL: "loom:echo",
      KNOWLEDGE_SEARCH_MODEL: "openai-compatible:compat-search",
      OPENAI_COMPATIBLE_BASE_URL: searchModel.baseUrl,
      ...(embeddings && embeddingModel
        ? { EMBEDDING_MODELS: embeddingModel, OPENAI_BASE_URL: embeddings.url, OPENAI_API_KEY: "local" }
        : {}),
    },
    `${url}/healthz`,
  );
  try {
    const bucket = (await apiClient(url, key).post("/buckets", { name: "griptape" })).body.bucket_id as string;
    const scripts = [".ci/compat/file_manager.py", ...(store === stores[0] ? storeIndependent : [])];
    for (const script of scripts) {
      const status = await runPython(script, {
        PATH: process.env.PATH ?? "",
        LOOM_URL: url,
        LOOM_KEY: key,
        LOOM_BUCKET: bucket,
        LOOM_STORE: store.name,
        MCP_URL: mcp.url,
        ...(embeddingModel ? { LOOM_EMBEDDING_MODEL: embeddingModel } : {}),
      });
      if (status !== 0) failed = true;
    }
  } finally {
    await stopProcess(loom);
    await cleanup();
  }
}
await mcp.close();
await embeddings?.close();
await searchModel.close();
if (!(await assistantWithTools(python))) failed = true;
process.exit(failed ? 1 : 0);
