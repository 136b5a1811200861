import { openChunkIndex } from "@loom/knowledge/index/open";
import type { ChunkIndex, NewChunk } from "@loom/knowledge/index/port";
import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { answer, type FakeOpenAI, failWith, type Reply, startFakeOpenAI } from "@loom/testing/fake-openai";
import type { ApiClient } from "@loom/testing/http";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  knowledgeBaseQueryListSchema,
  knowledgeBaseQuerySchema,
  knowledgeBaseSearchListSchema,
  knowledgeBaseSearchSchema,
} from "../src/schemas.ts";
import { expectError } from "./expect-error.ts";
import { organizationClients } from "./organization-clients.ts";

const uuid = () => crypto.randomUUID();
const at = new Date("2026-05-06T07:08:09.000Z");
/** The keys griptape 1.13's BaseVectorStoreDriver.Entry takes: one more is a TypeError in its driver. */
const entryKeys = ["id", "meta", "namespace", "score", "vector"];
/** The keys of griptape's TextArtifact.to_json(). */
const artifactKeys = ["id", "meta", "name", "reference", "type", "value"];

const chunk = (index: number, text: string, embedding?: number[]): NewChunk => ({
  text,
  position: { index, start: index * 100, end: index * 100 + text.length, headings: ["Gateways"] },
  ...(embedding ? { embedding: new Float32Array(embedding) } : {}),
});

/** The fake provider's embeddings: the vector the test chose for the query. */
const embeddingReply =
  (vector: number[]): Reply =>
  (request, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        object: "list",
        data: [{ object: "embedding", index: 0, embedding: vector }],
        model: request.body.model,
        usage: { prompt_tokens: 3, total_tokens: 3 },
      }),
    );
  };

describe.each(storeKinds("knowledge base queries over HTTP"))(
  "knowledge base queries over HTTP (%s store)",
  (store) => {
    let stack: TestStack;
    let index: ChunkIndex;
    let provider: FakeOpenAI;
    let admin: ApiClient;
    let stranger: ApiClient;
    let adminUserId: string;
    let orgId: string;
    let bucketId: string;
    const db = freshDatabaseName();

    beforeAll(async () => {
      provider = await startFakeOpenAI();
      // The test's own index, handed to the service: chunks go in through the index's port (ingest is another slice).
      index = await openChunkIndex({ url: store === "mongo" ? testServers.mongoUrl : undefined, db });
      stack = await startStack(store, {
        knowledge: {
          EMBEDDING_MODELS: "openai-compatible:test-embedder",
          OPENAI_COMPATIBLE_BASE_URL: provider.baseUrl,
          KNOWLEDGE_SEARCH_MODEL: "openai-compatible:test-answerer",
        },
        inject: { knowledge: { index } },
      });
      ({ admin, stranger, adminUserId, orgId } = await organizationClients(stack, `kbq-stranger-${store}`));
      bucketId = (await admin.post("/buckets", { name: "handbook" })).body.bucket_id;
    });
    afterAll(async () => {
      await stack?.close();
      await provider?.close();
      if (store === "mongo") await dropDatabase(testServers.mongoUrl!, db);
    });

    const newKnowledgeBase = async (client: ApiClient, embeddingModel: string | null = null) =>
      (
        await client.post("/knowledge-bases", {
          name: "Handbook",
          config: { gtc_pg_vector: { embedding_model: embeddingModel } },
        })
      ).body.knowledge_base_id as string;
    const seed = (organizationId: string, knowledgeBaseId: string, path: string, chunks: NewChunk[]) =>
      index.replaceAsset({ organizationId, knowledgeBaseId }, { bucketId, path, version: "v1" }, chunks, at);
    const countQueries = async (kb: string) =>
      (await admin.get(`/knowledge-bases/${kb}/queries`)).body.pagination.total_count as number;

    describe("without an embedding model (keywords)", () => {
      let kb: string;
      beforeAll(async () => {
        kb = await newKnowledgeBase(admin);
        await seed(orgId, kb, "gateways/umbermark.md", [
          chunk(0, "The Umbermark gateway listens on port 7431 behind the north proxy."),
          chunk(1, "Its logs rotate nightly."),
        ]);
        await seed(
          orgId,
          kb,
          "policies/leave.md",
          Array.from({ length: 8 }, (_, i) =>
            chunk(i, `Leave policy paragraph ${i}${i < 2 ? " on the gateway rota" : ""}.`),
          ),
        );
        // So that no word of the leave policy is in half the chunks (such words count only alone).
        await seed(
          orgId,
          kb,
          "misc/filler.md",
          Array.from({ length: 10 }, (_, i) => chunk(i, `Filler line ${i}.`)),
        );
      });

      it("answers griptape's entries: exactly its keys, the chunk as a TextArtifact JSON string naming its asset and place", async () => {
        const res = await admin.post(`/knowledge-bases/${kb}/query`, {
          query: "Which port does the Umbermark gateway listen on?",
          query_args: { count: 3 },
        });
        expect(res.status).toBe(200);
        const q = knowledgeBaseQuerySchema.parse(res.body);
        expect(q).toMatchObject({
          knowledge_base_id: kb,
          query: "Which port does the Umbermark gateway listen on?",
          query_args: { count: 3, include_vectors: false },
          mode: "keyword",
          created_by: adminUserId,
        });
        expect(q.entries).toHaveLength(3);
        for (const entry of res.body.entries) expect(Object.keys(entry).sort()).toEqual(entryKeys);
        const first = q.entries[0]!;
        expect(first.vector).toBeNull();
        expect(first.namespace).toBeNull();
        expect(first.score).toBeGreaterThan(0);
        const artifact = JSON.parse(first.meta.artifact);
        expect(Object.keys(artifact).sort()).toEqual(artifactKeys);
        expect(artifact).toEqual({
          type: "TextArtifact",
          id: first.id,
          reference: null,
          name: "gateways/umbermark.md",
          value: "The Umbermark gateway listens on port 7431 behind the north proxy.",
          meta: {
            knowledge_base_id: kb,
            bucket_id: bucketId,
            asset_name: "gateways/umbermark.md",
            chunk_index: 0,
            start: 0,
            end: 66,
            headings: ["Gateways"],
          },
        });
      });

      it("gives griptape's default of 5 entries when no count is sent, and at most what the knowledge base has", async () => {
        const res = await admin.post(`/knowledge-bases/${kb}/query`, { query: "leave policy" });
        expect(res.body.entries).toHaveLength(5);
        expect(res.body.query_args).toEqual({ count: 5, include_vectors: false });
        const all = await admin.post(`/knowledge-bases/${kb}/query`, {
          query: "leave policy",
          query_args: { count: 100 },
        });
        expect(all.body.entries).toHaveLength(8);
        // What griptape's driver sends when its caller names a metric: accepted.
        const metric = await admin.post(`/knowledge-bases/${kb}/query`, {
          query: "gateway",
          query_args: { distance_metric: "cosine", filter: {} },
        });
        expect(metric.status).toBe(200);
      });

      it("finds nothing for words no chunk has: an empty list, still kept", async () => {
        const res = await admin.post(`/knowledge-bases/${kb}/query`, { query: "zeppelin" });
        expect(res.status).toBe(200);
        expect(res.body.entries).toEqual([]);
        expect((await admin.get(`/knowledge-base-queries/${res.body.knowledge_base_query_id}`)).body.entries).toEqual(
          [],
        );
      });

      it("keeps each query: read again as answered, listed newest first", async () => {
        const kept = await newKnowledgeBase(admin);
        await seed(orgId, kept, "a.md", [chunk(0, "alpha bravo")]);
        const first = (await admin.post(`/knowledge-bases/${kept}/query`, { query: "alpha" })).body;
        const second = (await admin.post(`/knowledge-bases/${kept}/query`, { query: "bravo" })).body;
        const got = await admin.get(`/knowledge-base-queries/${first.knowledge_base_query_id}`);
        expect(got.status).toBe(200);
        expect(got.body).toEqual(first);
        const list = await admin.get(`/knowledge-bases/${kept}/queries?page_size=1`);
        expect(list.status).toBe(200);
        const page = knowledgeBaseQueryListSchema.parse(list.body);
        expect(page.knowledge_base_queries).toEqual([second]);
        expect(page.pagination).toMatchObject({ total_count: 2, total_pages: 2, page_number: 1, page_size: 1 });
        // Deleting the knowledge base deletes its kept queries.
        expect((await admin.delete(`/knowledge-bases/${kept}`)).status).toBe(204);
        expectError(await admin.get(`/knowledge-base-queries/${first.knowledge_base_query_id}`), 404, "NotFound");
      });

      it.each([
        ["an empty query", { query: "" }, ["body.query"]],
        ["a query over 10,000 characters", { query: "x".repeat(10_001) }, ["body.query"]],
        ["count 0", { query: "gateway", query_args: { count: 0 } }, ["body.query_args.count"]],
        ["count 101", { query: "gateway", query_args: { count: 101 } }, ["body.query_args.count"]],
        ["a filter", { query: "gateway", query_args: { filter: { bucket_id: "x" } } }, ["body.query_args.filter"]],
        ["no query", { query_args: { count: 1 } }, ["body.query"]],
      ])("400 naming the field for %s, and nothing is kept", async (_, body, paths) => {
        const before = await countQueries(kb);
        const error = expectError(await admin.post(`/knowledge-bases/${kb}/query`, body), 400, "ValidationError");
        expect(error.errors.map((e) => e.path)).toEqual(paths);
        expect(await countQueries(kb)).toBe(before);
      });

      it("404 for an unknown knowledge base or query", async () => {
        expectError(await admin.post(`/knowledge-bases/${uuid()}/query`, { query: "gateway" }), 404, "NotFound");
        expectError(await admin.get(`/knowledge-base-queries/${uuid()}`), 404, "NotFound");
        expectError(await admin.get(`/knowledge-bases/${uuid()}/queries`), 404, "NotFound");
      });
    });

    describe("isolation", () => {
      it("another organization's query never sees a chunk: its knowledge base, its queries and its index are its own", async () => {
        const kb = await newKnowledgeBase(admin);
        await seed(orgId, kb, "secret.md", [chunk(0, "The vault code is orchid-42.")]);
        const mine = (await admin.post(`/knowledge-bases/${kb}/query`, { query: "vault code" })).body;
        expect(mine.entries).toHaveLength(1);

        expectError(await stranger.post(`/knowledge-bases/${kb}/query`, { query: "vault code" }), 404, "NotFound");
        expectError(await stranger.get(`/knowledge-base-queries/${mine.knowledge_base_query_id}`), 404, "NotFound");
        expectError(await stranger.get(`/knowledge-bases/${kb}/queries`), 404, "NotFound");

        // The stranger's own knowledge base finds only the stranger's chunks, never the admin's of the same words.
        const theirs = await newKnowledgeBase(stranger);
        const strangerOrg = (await stranger.get(`/knowledge-bases/${theirs}`)).body.organization_id;
        await seed(strangerOrg, theirs, "public.md", [chunk(0, "The vault is open on Sundays.")]);
        const found = (await stranger.post(`/knowledge-bases/${theirs}/query`, { query: "vault code orchid" })).body;
        expect(found.entries.map((e: { meta: { artifact: string } }) => JSON.parse(e.meta.artifact).value)).toEqual([
          "The vault is open on Sundays.",
        ]);
        expect((await admin.get(`/knowledge-bases/${kb}/queries`)).body.pagination.total_count).toBe(1);
      });
    });

    describe("with an embedding model (hybrid)", () => {
      it("embeds the query with the knowledge base's model and fuses: a chunk with no word of the query is found by meaning", async () => {
        const kb = await newKnowledgeBase(admin, "openai-compatible:test-embedder");
        await seed(orgId, kb, "colleagues.md", [
          chunk(0, "Dana keeps a tank of tropical fish in the finance corner.", [1, 0, 0]),
          chunk(1, "Who maintains the printers? Facilities.", [0, 1, 0]),
          chunk(2, "The cafeteria opens at eight.", [0, 0, 1]),
        ]);
        provider.reply(embeddingReply([0.9, 0.1, 0]));
        const sent = provider.nextRequest();
        const res = await admin.post(`/knowledge-bases/${kb}/query`, {
          query: "Who maintains an aquarium in accounting?",
          query_args: { count: 2, include_vectors: true },
        });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        const request = await sent;
        expect(request.path).toBe("/v1/embeddings");
        expect(request.body).toMatchObject({
          model: "test-embedder",
          input: ["Who maintains an aquarium in accounting?"],
        });
        const q = knowledgeBaseQuerySchema.parse(res.body);
        expect(q.mode).toBe("hybrid");
        const values = q.entries.map((e) => JSON.parse(e.meta.artifact).value);
        expect(values).toHaveLength(2);
        expect(values).toContain("Dana keeps a tank of tropical fish in the finance corner.");
        const fish = q.entries.find((e) => JSON.parse(e.meta.artifact).value.startsWith("Dana"))!;
        expect(fish.vector).toEqual([1, 0, 0]);
        for (const entry of q.entries) expect(entry.score).toBeGreaterThan(0);
      });

      it("503 naming the model when its provider fails, and nothing is kept", async () => {
        const kb = await newKnowledgeBase(admin, "openai-compatible:test-embedder");
        provider.reply(failWith(500, "the embedder is down"));
        const error = expectError(
          await admin.post(`/knowledge-bases/${kb}/query`, { query: "fish" }),
          503,
          "Unavailable",
        );
        expect(error.errors[0]?.message).toMatch(/test-embedder/);
        expect(await countQueries(kb)).toBe(0);
      });

      describe("searches (an answer written from the chunks)", () => {
        const fact = "The Umbermark gateway listens on port 7431 behind the north proxy.";
        let kb: string;
        beforeAll(async () => {
          kb = await newKnowledgeBase(admin);
          await seed(orgId, kb, "gateways/umbermark.md", [
            chunk(0, fact),
            chunk(1, "The canteen serves soup on Thursdays."),
          ]);
        });
        const countSearches = async () =>
          (await admin.get(`/knowledge-bases/${kb}/searches`)).body.pagination.total_count as number;

        it("gives the search model the chunk found and the question, answers its text, and keeps the search", async () => {
          provider.reply(answer("Port 7431 [1]."));
          const sent = provider.nextRequest();
          const res = await admin.post(`/knowledge-bases/${kb}/search`, {
            query: "Which port does the Umbermark gateway listen on?",
          });
          expect(res.status, JSON.stringify(res.body)).toBe(200);
          const search = knowledgeBaseSearchSchema.parse(res.body);
          expect(search).toMatchObject({
            knowledge_base_id: kb,
            query: "Which port does the Umbermark gateway listen on?",
            result: "Port 7431 [1].",
            model: "openai-compatible:test-answerer",
            created_by: adminUserId,
          });
          expect(JSON.parse(search.entries[0]!.meta.artifact).value).toBe(fact);
          const request = await sent;
          expect(request.path).toBe("/v1/chat/completions");
          expect(request.body.model).toBe("test-answerer");
          const prompt = JSON.stringify(request.body.messages);
          expect(prompt).toContain(fact);
          expect(prompt).toContain("Which port does the Umbermark gateway listen on?");

          const got = await admin.get(`/knowledge-base-searches/${search.knowledge_base_search_id}`);
          expect(got.body).toEqual(res.body);
          const list = knowledgeBaseSearchListSchema.parse((await admin.get(`/knowledge-bases/${kb}/searches`)).body);
          expect(list.knowledge_base_searches[0]).toEqual(res.body);
        });

        it("another organization cannot search, read or list them", async () => {
          provider.reply(answer("Port 7431 [1]."));
          const mine = (await admin.post(`/knowledge-bases/${kb}/search`, { query: "Umbermark port" })).body;
          expectError(
            await stranger.post(`/knowledge-bases/${kb}/search`, { query: "Umbermark port" }),
            404,
            "NotFound",
          );
          expectError(await stranger.get(`/knowledge-base-searches/${mine.knowledge_base_search_id}`), 404, "NotFound");
          expectError(await stranger.get(`/knowledge-bases/${kb}/searches`), 404, "NotFound");
        });

        it("400 for an empty query and 503 when the search model fails; nothing is kept", async () => {
          const before = await countSearches();
          const bad = expectError(
            await admin.post(`/knowledge-bases/${kb}/search`, { query: "" }),
            400,
            "ValidationError",
          );
          expect(bad.errors.map((e) => e.path)).toEqual(["body.query"]);
          provider.reply(failWith(500, "the answerer is down"));
          const down = expectError(
            await admin.post(`/knowledge-bases/${kb}/search`, { query: "soup" }),
            503,
            "Unavailable",
          );
          expect(down.errors[0]?.message).toMatch(/test-answerer/);
          expect(await countSearches()).toBe(before);
        });
      });
    });
  },
);
