import type { ServerResponse } from "node:http";
import { openChunkIndex } from "@loom/knowledge/index/open";
import type { ChunkIndex } from "@loom/knowledge/index/port";
import type { ReceivedRequest } from "@loom/testing/fake-openai";
import { needsOwnServers } from "@loom/testing/own-servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FaultStack, faultLeaseMs, startFaultStack, waitUntil } from "./fault-stack.ts";

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

/** Issue 35: the knowledge process is killed during an ingest job; the job ends after a restart, no file half-updated. */
describe.skipIf(!needsOwnServers("knowledge process killed mid-ingest", "nats", "ferretdb"))(
  "the knowledge process killed during an ingest job",
  () => {
    let stack: FaultStack;
    let index: ChunkIndex;
    beforeAll(async () => {
      stack = await startFaultStack({
        knowledge: {
          EMBEDDING_MODELS: "openai-compatible:fake-embedder",
          KNOWLEDGE_INGEST_LEASE_MS: String(faultLeaseMs),
          KNOWLEDGE_INGEST_POLL_MS: "100",
        },
      });
      index = await openChunkIndex({ url: stack.mongo.url, db: "loom_knowledge" });
    }, 60_000);
    afterAll(async () => {
      await index?.close();
      await stack?.close();
    });

    it("resumes the job after a restart: the files done are skipped, the one in hand was all old, then all new", {
      timeout: 60_000,
    }, async () => {
      const { api } = stack;
      const bucketId = (await api.post("/buckets", { name: "crash" })).body.bucket_id;
      const upload = async (name: string, text: string) => {
        await api.put(`/buckets/${bucketId}/assets`, { name });
        const { url } = (await api.post(`/buckets/${bucketId}/asset-urls/${name}`, { operation: "PUT" })).body;
        expect((await fetch(url, { method: "PUT", body: text })).status).toBe(200);
      };
      const files = ["a.txt", "b.txt", "c.txt"];
      for (const name of files) await upload(name, `The ${name} file says alpha${name[0]}.`);
      stack.model.reply(embeddings);
      const kb = (
        await api.post("/knowledge-bases", {
          name: "crash",
          config: { gtc_pg_vector: { embedding_model: "openai-compatible:fake-embedder" } },
          asset_paths: [`${bucketId}/`],
        })
      ).body;
      const scope = { organizationId: kb.organization_id, knowledgeBaseId: kb.knowledge_base_id };
      const job = async (id: string) => (await api.get(`/knowledge-base-jobs/${id}`)).body;
      const ingest = async () =>
        (await api.post(`/knowledge-bases/${kb.knowledge_base_id}/knowledge-base-jobs`)).body.knowledge_base_job_id;
      const ended = (id: string) =>
        waitUntil("the job ended", 30_000, async () => {
          const j = await job(id);
          return ["SUCCEEDED", "FAILED", "CANCELLED"].includes(j.status) ? j : undefined;
        });
      expect((await ended(await ingest())).status).toBe("SUCCEEDED");

      // Every file changes; the provider answers the first file's embeddings and holds the second's.
      for (const name of files) await upload(name, `The ${name} file now says omega${name[0]}.`);
      let requests = 0;
      stack.model.reply((request, res) => {
        requests++;
        if (requests === 1) embeddings(request, res);
      });
      const crashing = await ingest();
      await waitUntil("the second file's embeddings asked", 20_000, async () => (requests >= 2 ? true : undefined));
      await stack.split.stopService("knowledge", "SIGKILL");

      // At the kill: a.txt all new, b.txt and c.txt all old.
      const words = async (word: string) => (await index.keywordSearch(scope, word, 10)).map((h) => h.chunk.path);
      expect(await words("omegaa")).toEqual(["a.txt"]);
      expect(await words("alphab")).toEqual(["b.txt"]);
      expect(await words("omegab")).toEqual([]);
      expect(await words("alphac")).toEqual(["c.txt"]);

      const embeddedAfter: string[] = [];
      stack.model.reply((request, res) => {
        embeddedAfter.push(...[request.body.input].flat());
        embeddings(request, res);
      });
      await stack.split.startService("knowledge");
      const done = await ended(crashing);
      console.log(`knowledge SIGKILL mid-ingest: job ${done.status} after restart (lease ${faultLeaseMs} ms)`);
      expect(done).toMatchObject({ status: "SUCCEEDED", errors: [] });
      // a.txt was done before the kill: skipped by its version, not embedded again.
      expect(embeddedAfter.sort()).toEqual(["The b.txt file now says omegab.", "The c.txt file now says omegac."]);
      for (const name of files) {
        expect(await words(`omega${name[0]}`)).toEqual([name]);
        expect(await words(`alpha${name[0]}`)).toEqual([]);
      }
      expect(await index.countChunks(scope)).toBe(3);
    });
  },
);
