import type { ServerResponse } from "node:http";
import type { ChunkIndex } from "@loom/knowledge/index/port";
import type { FakeOpenAI, ReceivedRequest } from "@loom/testing/fake-openai";
import type { ApiClient } from "@loom/testing/http";
import { expect } from "vitest";
import { waitUntil } from "./fault-stack.ts";

/** The embedding model the crash tests configure, served by their fake OpenAI-compatible server. */
export const crashEmbeddingModel = "openai-compatible:fake-embedder";

/** Embeddings of 2 dimensions from the text, answered at once. */
function embeddings(request: ReceivedRequest, res: ServerResponse): void {
  const inputs: string[] = [request.body.input].flat();
  res.writeHead(200, { "content-type": "application/json" });
  res.end(
    JSON.stringify({
      object: "list",
      data: inputs.map((input, index) => ({ object: "embedding", index, embedding: [1, input.length / 100] })),
      model: request.body.model,
      usage: { prompt_tokens: 1, total_tokens: 1 },
    }),
  );
}

export interface IngestCrashDeps {
  api: ApiClient;
  embedder: FakeOpenAI;
  /** Kills the process that runs the knowledge service (SIGKILL). */
  kill(): Promise<void>;
  /** Starts it again; the API client to use from then on. */
  restart(): Promise<ApiClient>;
  /** The knowledge service's chunk index, read from its database. */
  index: ChunkIndex;
}

/**
 * Issue 35's crash: three files ingested, all three changed, a second job killed while the second file's
 * embeddings are asked. At the kill the first file is all new and the others all old; after a restart the job
 * resumes (the first file skipped by its version), ends SUCCEEDED, and every file is all new.
 */
export async function ingestCrash(deps: IngestCrashDeps): Promise<{ status: string; afterMs: number }> {
  let api = deps.api;
  const bucketId = (await api.post("/buckets", { name: "crash" })).body.bucket_id;
  const upload = async (name: string, text: string) => {
    await api.put(`/buckets/${bucketId}/assets`, { name });
    const { url } = (await api.post(`/buckets/${bucketId}/asset-urls/${name}`, { operation: "PUT" })).body;
    expect((await fetch(url, { method: "PUT", body: text })).status).toBe(200);
  };
  const files = ["a.txt", "b.txt", "c.txt"];
  for (const name of files) await upload(name, `The ${name} file says alpha${name[0]}.`);
  deps.embedder.reply(embeddings);
  const kb = (
    await api.post("/knowledge-bases", {
      name: "crash",
      config: { gtc_pg_vector: { embedding_model: crashEmbeddingModel } },
      asset_paths: [`${bucketId}/`],
    })
  ).body;
  const scope = { organizationId: kb.organization_id, knowledgeBaseId: kb.knowledge_base_id };
  const ingest = async () =>
    (await api.post(`/knowledge-bases/${kb.knowledge_base_id}/knowledge-base-jobs`)).body.knowledge_base_job_id;
  const ended = (id: string) =>
    waitUntil("the job ended", 30_000, async () => {
      const job = (await api.get(`/knowledge-base-jobs/${id}`)).body;
      return ["SUCCEEDED", "FAILED", "CANCELLED"].includes(job.status) ? job : undefined;
    });
  expect((await ended(await ingest())).status).toBe("SUCCEEDED");

  // Every file changes; the provider answers the first file's embeddings and holds the second's.
  for (const name of files) await upload(name, `The ${name} file now says omega${name[0]}.`);
  let requests = 0;
  deps.embedder.reply((request, res) => {
    requests++;
    if (requests === 1) embeddings(request, res);
  });
  const crashing = await ingest();
  await waitUntil("the second file's embeddings asked", 20_000, async () => (requests >= 2 ? true : undefined));
  await deps.kill();

  const words = async (word: string) => (await deps.index.keywordSearch(scope, word, 10)).map((h) => h.chunk.path);
  expect(await words("omegaa")).toEqual(["a.txt"]);
  expect(await words("alphab")).toEqual(["b.txt"]);
  expect(await words("omegab")).toEqual([]);
  expect(await words("alphac")).toEqual(["c.txt"]);

  const embeddedAfter: string[] = [];
  deps.embedder.reply((request, res) => {
    embeddedAfter.push(...[request.body.input].flat());
    embeddings(request, res);
  });
  const restartedAt = Date.now();
  api = await deps.restart();
  const done = await ended(crashing);
  expect(done).toMatchObject({ status: "SUCCEEDED", errors: [] });
  // a.txt was done before the kill: skipped by its version, not embedded again.
  expect(embeddedAfter.sort()).toEqual(["The b.txt file now says omegab.", "The c.txt file now says omegac."]);
  for (const name of files) {
    expect(await words(`omega${name[0]}`)).toEqual([name]);
    expect(await words(`alpha${name[0]}`)).toEqual([]);
  }
  expect(await deps.index.countChunks(scope)).toBe(3);
  return { status: done.status, afterMs: Date.now() - restartedAt };
}
