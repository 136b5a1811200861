import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { laterThan } from "@loom/testing/clock";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { storeKinds } from "@loom/testing/servers";
import { signAccessToken } from "@loom/testing/tokens";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { knowledgeBaseListSchema, knowledgeBaseSchema } from "../src/schemas.ts";
import { expectError } from "./expect-error.ts";
import { organizationClients } from "./organization-clients.ts";

const uuid = () => crypto.randomUUID();

/**
 * The keys griptape-cloud-client 0.2.0's KnowledgeBaseDetail.from_dict pops
 * without a default, and those its GTCPGVectorKnowledgeBaseDetail pops from
 * `config.gtc_pg_vector`: one missing fails its parse.
 */
const clientRequiredKeys = [
  "asset_paths",
  "config",
  "created_at",
  "created_by",
  "knowledge_base_id",
  "name",
  "organization_id",
  "type",
  "updated_at",
];
const clientRequiredConfigKeys = ["embedding_model", "query_schema", "use_default_embedding_model"];

/** The embedding model the stack configures (its server is never called by CRUD). */
const model = "openai-compatible:test-embedder";

describe.each(storeKinds("knowledge bases over HTTP"))("knowledge bases over HTTP (%s store)", (store) => {
  let stack: TestStack;
  let admin: ApiClient;
  let stranger: ApiClient;
  let adminUserId: string;
  let orgId: string;
  let bucketId: string;
  let otherBucketId: string;
  let strangersBucketId: string;
  let connectorId: string;

  beforeAll(async () => {
    stack = await startStack(store, {
      knowledge: {
        EMBEDDING_MODELS: `${model}, openai-compatible:other`,
        OPENAI_COMPATIBLE_BASE_URL: "http://127.0.0.1:9/v1",
      },
    });
    ({ admin, stranger, adminUserId, orgId } = await organizationClients(stack, `kb-stranger-${store}`));
    bucketId = (await admin.post("/buckets", { name: "handbook" })).body.bucket_id;
    otherBucketId = (await admin.post("/buckets", { name: "wiki" })).body.bucket_id;
    strangersBucketId = (await stranger.post("/buckets", { name: "theirs" })).body.bucket_id;
    connectorId = (
      await admin.post("/data-connectors", {
        name: "wiki",
        type: "data_lake",
        config: { data_lake: { bucket_id: otherBucketId } },
      })
    ).body.data_connector_id;
  });
  afterAll(() => stack?.close());

  const countBases = async () => (await admin.get("/knowledge-bases")).body.pagination.total_count as number;

  describe("CreateKnowledgeBase", () => {
    it("creates with every field, answering 201 in KnowledgeBaseDetail's shape of kind gtc_pg_vector", async () => {
      const res = await admin.post("/knowledge-bases", {
        name: "Handbook",
        description: "How we work",
        type: "gtc_pg_vector",
        config: { gtc_pg_vector: { embedding_model: model } },
        asset_paths: [`${bucketId}/policies/leave.md`, `${bucketId}/guides/`, `${otherBucketId}/`],
        data_connector_ids: [connectorId.toUpperCase()],
      });
      expect(res.status).toBe(201);
      const kb = knowledgeBaseSchema.parse(res.body);
      expect(kb).toEqual({
        knowledge_base_id: kb.knowledge_base_id,
        organization_id: orgId,
        name: "Handbook",
        description: "How we work",
        type: "gtc_pg_vector",
        config: { gtc_pg_vector: { embedding_model: model, query_schema: null, use_default_embedding_model: false } },
        asset_paths: [`${bucketId}/policies/leave.md`, `${bucketId}/guides/`, `${otherBucketId}/`],
        data_connector_ids: [connectorId],
        created_at: kb.created_at,
        created_by: adminUserId,
        updated_at: kb.created_at,
      });
      expect(Object.keys(res.body)).toEqual(expect.arrayContaining(clientRequiredKeys));
      expect(Object.keys(res.body.config.gtc_pg_vector)).toEqual(expect.arrayContaining(clientRequiredConfigKeys));
    });

    it("creates from a name alone: no model (keyword search only), no paths, the description empty", async () => {
      const res = await admin.post("/api/knowledge-bases", { name: "Minimal" });
      expect(res.status).toBe(201);
      expect(knowledgeBaseSchema.parse(res.body)).toMatchObject({
        description: "",
        type: "gtc_pg_vector",
        config: { gtc_pg_vector: { embedding_model: null } },
        asset_paths: [],
        data_connector_ids: [],
      });
    });

    it("creates from what the generated client sends for its gtc_pg_vector kind, and keeps a bucket id in lower case", async () => {
      const res = await admin.post("/api/knowledge-bases", {
        name: "Client",
        type: "gtc_pg_vector",
        config: { gtc_pg_vector: { use_default_embedding_model: false } },
        asset_paths: [`${bucketId.toUpperCase()}/a.txt`],
        transforms: [],
      });
      expect(res.status).toBe(201);
      expect(res.body.asset_paths).toEqual([`${bucketId}/a.txt`]);
      expect(res.body.config.gtc_pg_vector.embedding_model).toBeNull();
    });

    it.each([
      [{ type: "pg_vector" }, ["body.type"]],
      [{ config: { pg_vector: {} } }, ["body.config"]],
      [
        { config: { gtc_pg_vector: { embedding_model: "openai:unknown" } } },
        ["body.config.gtc_pg_vector.embedding_model"],
      ],
      [
        { config: { gtc_pg_vector: { use_default_embedding_model: true } } },
        ["body.config.gtc_pg_vector.use_default_embedding_model"],
      ],
      [{ embedding_model: "text-embedding-3-small" }, ["body.embedding_model"]],
      [{ name: "" }, ["body.name"]],
      [{ description: "x".repeat(201) }, ["body.description"]],
      [{ asset_paths: "all" }, ["body.asset_paths"]],
      [{ data_connector_ids: ["not-an-id"] }, ["body.data_connector_ids[0]"]],
    ])("400 naming the field for %j, and nothing is written", async (fields, paths) => {
      const before = await countBases();
      const body = expectError(
        await admin.post("/knowledge-bases", { name: "Bad", ...fields }),
        400,
        "ValidationError",
      );
      expect(body.errors.map((e) => e.path)).toEqual(paths);
      expect(await countBases()).toBe(before);
    });

    it("400 naming each malformed, repeated or foreign path (another organization's bucket, an unknown one), and nothing is written", async () => {
      const before = await countBases();
      const malformed = expectError(
        await admin.post("/knowledge-bases", {
          name: "Bad paths",
          asset_paths: [
            `${bucketId}/ok.md`,
            bucketId,
            `${bucketId}/../up.md`,
            `${bucketId}//twice.md`,
            "not-a-bucket/a.md",
            `${bucketId}/ok.md`,
            `${bucketId}/dir//`,
          ],
        }),
        400,
        "ValidationError",
      );
      expect(malformed.errors.map((e) => e.path)).toEqual([1, 2, 3, 4, 5, 6].map((i) => `body.asset_paths[${i}]`));
      const foreign = expectError(
        await admin.post("/knowledge-bases", {
          name: "Foreign paths",
          asset_paths: [`${bucketId}/`, `${strangersBucketId}/`, `${uuid()}/x.md`, `${strangersBucketId}/y.md`],
        }),
        400,
        "ValidationError",
      );
      expect(foreign.errors.map((e) => [e.path, e.message])).toEqual(
        [1, 2, 3].map((i) => [`body.asset_paths[${i}]`, "names no bucket of the organization"]),
      );
      const tooMany = expectError(
        await admin.post("/knowledge-bases", {
          name: "Too many",
          asset_paths: Array.from({ length: 101 }, (_, i) => `${bucketId}/${i}.md`),
        }),
        400,
        "ValidationError",
      );
      expect(tooMany.errors.map((e) => e.path)).toEqual(["body.asset_paths"]);
      const strangersConnector = (
        await stranger.post("/data-connectors", {
          name: "theirs",
          config: { data_lake: { bucket_id: strangersBucketId } },
        })
      ).body.data_connector_id;
      const connectors = expectError(
        await admin.post("/knowledge-bases", {
          name: "Bad connectors",
          data_connector_ids: [connectorId, strangersConnector, uuid(), connectorId],
        }),
        400,
        "ValidationError",
      );
      expect(connectors.errors.map((e) => e.path)).toEqual([1, 2, 3].map((i) => `body.data_connector_ids[${i}]`));
      expect(connectors.errors[2]?.message).toMatch(/is named twice/);
      expect(await countBases()).toBe(before);
    });
  });

  describe("one knowledge base", () => {
    let id: string;
    beforeAll(async () => {
      id = (
        await admin.post("/knowledge-bases", {
          name: "Ops",
          config: { gtc_pg_vector: { embedding_model: model } },
          asset_paths: [`${bucketId}/ops/`],
        })
      ).body.knowledge_base_id;
    });

    it("gets one knowledge base", async () => {
      const res = await admin.get(`/knowledge-bases/${id}`);
      expect(res.status).toBe(200);
      expect(knowledgeBaseSchema.parse(res.body)).toMatchObject({ knowledge_base_id: id, name: "Ops" });
    });

    it("updates only the fields sent; paths sent replace the stored ones; a config without a model keeps it", async () => {
      const before = (await admin.get(`/knowledge-bases/${id}`)).body;
      await laterThan(before.updated_at);
      const res = await admin.patch(`/knowledge-bases/${id}`, {
        description: "Runbooks",
        type: "gtc_pg_vector",
        config: { gtc_pg_vector: {} },
        asset_paths: [`${otherBucketId}/runbooks/`],
      });
      expect(res.status).toBe(200);
      expect(knowledgeBaseSchema.parse(res.body)).toEqual({
        ...before,
        description: "Runbooks",
        asset_paths: [`${otherBucketId}/runbooks/`],
        updated_at: res.body.updated_at,
      });
      expect(Date.parse(res.body.updated_at)).toBeGreaterThan(Date.parse(before.updated_at));
      expect((await admin.get(`/knowledge-bases/${id}`)).body).toEqual(res.body);
    });

    it("changes the embedding model to another configured one, and to none with null", async () => {
      const other = await admin.patch(`/knowledge-bases/${id}`, {
        config: { gtc_pg_vector: { embedding_model: "openai-compatible:other" } },
      });
      expect(other.body.config.gtc_pg_vector.embedding_model).toBe("openai-compatible:other");
      const none = await admin.patch(`/knowledge-bases/${id}`, {
        config: { gtc_pg_vector: { embedding_model: null } },
      });
      expect(none.body.config.gtc_pg_vector.embedding_model).toBeNull();
      const back = await admin.patch(`/knowledge-bases/${id}`, {
        config: { gtc_pg_vector: { embedding_model: model } },
      });
      expect(back.body.config.gtc_pg_vector.embedding_model).toBe(model);
    });

    it("an empty or absent update body changes nothing", async () => {
      const before = (await admin.get(`/knowledge-bases/${id}`)).body;
      expect((await admin.patch(`/knowledge-bases/${id}`, {})).body).toEqual(before);
      expect((await admin.patch(`/knowledge-bases/${id}`)).body).toEqual(before);
    });

    it("a rejected update changes nothing, even its valid fields", async () => {
      const before = (await admin.get(`/knowledge-bases/${id}`)).body;
      const res = await admin.patch(`/knowledge-bases/${id}`, {
        name: "Renamed",
        config: { gtc_pg_vector: { embedding_model: "openai:text-embedding-3-small" } },
        asset_paths: [`${strangersBucketId}/`],
      });
      expect(expectError(res, 400, "ValidationError").errors.map((e) => e.path)).toEqual([
        "body.config.gtc_pg_vector.embedding_model",
        "body.asset_paths[0]",
      ]);
      expect((await admin.get(`/knowledge-bases/${id}`)).body).toEqual(before);
    });

    it("404 for another organization's knowledge base, which stays untouched", async () => {
      const before = (await admin.get(`/knowledge-bases/${id}`)).body;
      expectError(await stranger.get(`/knowledge-bases/${id}`), 404, "NotFound");
      expectError(await stranger.patch(`/knowledge-bases/${id}`, { name: "mine now" }), 404, "NotFound");
      expectError(await stranger.delete(`/knowledge-bases/${id}`), 404, "NotFound");
      expect((await admin.get(`/knowledge-bases/${id}`)).body).toEqual(before);
      expect((await stranger.get("/knowledge-bases")).body.knowledge_bases).toEqual([]);
    });

    it("404 for an unknown id, 400 for a malformed one", async () => {
      expectError(await admin.get(`/knowledge-bases/${uuid()}`), 404, "NotFound");
      expectError(await admin.patch(`/knowledge-bases/${uuid()}`, { name: "x" }), 404, "NotFound");
      expectError(await admin.delete(`/knowledge-bases/${uuid()}`), 404, "NotFound");
      expect(expectError(await admin.get("/knowledge-bases/123"), 400, "ValidationError").errors[0]?.path).toBe(
        "path.knowledge_base_id",
      );
    });

    it("deletes with 204 and no body; the knowledge base is gone", async () => {
      const doomed = (await admin.post("/knowledge-bases", { name: "Doomed" })).body.knowledge_base_id;
      const res = await admin.delete(`/knowledge-bases/${doomed}`);
      expect(res.status).toBe(204);
      expect(res.body).toBeUndefined();
      expectError(await admin.get(`/knowledge-bases/${doomed}`), 404, "NotFound");
      expectError(await admin.delete(`/knowledge-bases/${doomed}`), 404, "NotFound");
    });
  });

  describe("ListKnowledgeBases", () => {
    let lister: ApiClient;
    const made: string[] = [];
    beforeAll(async () => {
      lister = apiClient(stack.gatewayUrl, await signAccessToken({ sub: `kb-lister-${store}` }));
      for (let i = 0; i < 3; i++)
        made.push((await lister.post("/knowledge-bases", { name: `kb${i}` })).body.knowledge_base_id);
    });

    it("pages newest first", async () => {
      const first = await lister.get("/knowledge-bases?page_size=2");
      expect(knowledgeBaseListSchema.parse(first.body).pagination).toEqual({
        page_number: 1,
        page_size: 2,
        total_count: 3,
        total_pages: 2,
        next_page: 2,
      });
      const second = await lister.get("/api/knowledge-bases?page=2&page_size=2");
      expect(second.body.pagination).toMatchObject({ page_number: 2, previous_page: 1 });
      expect(
        [...first.body.knowledge_bases, ...second.body.knowledge_bases].map(
          (kb: { knowledge_base_id: string }) => kb.knowledge_base_id,
        ),
      ).toEqual([...made].reverse());
      for (const kb of first.body.knowledge_bases)
        expect(Object.keys(kb)).toEqual(expect.arrayContaining(clientRequiredKeys));
    });

    it.each(["page_size=0", "page_size=101", "page=0", "page=x"])("400 for %s", async (query) => {
      expectError(await lister.get(`/knowledge-bases?${query}`), 400, "ValidationError");
    });
  });
});
