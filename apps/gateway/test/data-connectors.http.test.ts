import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { laterThan } from "@loom/testing/clock";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { storeKinds } from "@loom/testing/servers";
import { signAccessToken } from "@loom/testing/tokens";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dataConnectorListSchema, dataConnectorSchema } from "../src/schemas.ts";
import { expectError } from "./expect-error.ts";
import { organizationClients } from "./organization-clients.ts";

const uuid = () => crypto.randomUUID();

/** The keys griptape-cloud-client 0.2.0's DataConnectorDetail.from_dict pops without a default, and its DataLakeConnectorDetail's. */
const clientRequiredKeys = [
  "config",
  "created_at",
  "created_by",
  "data_connector_id",
  "name",
  "organization_id",
  "type",
  "updated_at",
];
const clientRequiredDataLakeKeys = ["asset_paths", "bucket_id"];

describe.each(storeKinds("data connectors over HTTP"))("data connectors over HTTP (%s store)", (store) => {
  let stack: TestStack;
  let admin: ApiClient;
  let stranger: ApiClient;
  let adminUserId: string;
  let orgId: string;
  let bucketId: string;
  let otherBucketId: string;
  let strangersBucketId: string;

  beforeAll(async () => {
    stack = await startStack(store);
    ({ admin, stranger, adminUserId, orgId } = await organizationClients(stack, `dc-stranger-${store}`));
    bucketId = (await admin.post("/buckets", { name: "handbook" })).body.bucket_id;
    otherBucketId = (await admin.post("/buckets", { name: "wiki" })).body.bucket_id;
    strangersBucketId = (await stranger.post("/buckets", { name: "theirs" })).body.bucket_id;
  });
  afterAll(() => stack?.close());

  const countConnectors = async () => (await admin.get("/data-connectors")).body.pagination.total_count as number;
  const dataLake = (bucket: string, assetPaths?: string[]) => ({
    data_lake: { bucket_id: bucket, ...(assetPaths ? { asset_paths: assetPaths } : {}) },
  });

  describe("CreateDataConnector", () => {
    it("creates a data_lake connector, answering 201 in DataConnectorDetail's shape", async () => {
      const res = await admin.post("/data-connectors", {
        name: "Handbook",
        description: "Policies and guides",
        type: "data_lake",
        config: dataLake(bucketId.toUpperCase(), ["policies/", "guides/intro.md"]),
      });
      expect(res.status).toBe(201);
      const c = dataConnectorSchema.parse(res.body);
      expect(c).toEqual({
        data_connector_id: c.data_connector_id,
        organization_id: orgId,
        name: "Handbook",
        description: "Policies and guides",
        type: "data_lake",
        config: { data_lake: { bucket_id: bucketId, asset_paths: ["policies/", "guides/intro.md"] } },
        created_at: c.created_at,
        created_by: adminUserId,
        updated_at: c.created_at,
      });
      expect(Object.keys(res.body)).toEqual(expect.arrayContaining(clientRequiredKeys));
      expect(Object.keys(res.body.config.data_lake)).toEqual(expect.arrayContaining(clientRequiredDataLakeKeys));
    });

    it("a bucket without paths is the whole bucket: asset_paths is empty", async () => {
      const res = await admin.post("/api/data-connectors", { name: "All", config: dataLake(bucketId) });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ description: "", type: "data_lake", config: dataLake(bucketId, []) });
    });

    it.each([
      [{ type: "s3", config: dataLake(uuid()) }, ["body.type"]],
      // Both problems: the kind the client sent, and the one Loom needs.
      [{ config: { s3: { bucket_name: "b" } } }, ["body.config.data_lake", "body.config"]],
      [{}, ["body.config"]],
      [{ config: { data_lake: {} } }, ["body.config.data_lake.bucket_id"]],
      [{ config: dataLake("not-a-uuid") }, ["body.config.data_lake.bucket_id"]],
      [{ name: "", config: dataLake(uuid()) }, ["body.name"]],
    ])("400 naming the field for %j, and nothing is written", async (fields, paths) => {
      const before = await countConnectors();
      const body = expectError(
        await admin.post("/data-connectors", { name: "Bad", ...fields }),
        400,
        "ValidationError",
      );
      expect(body.errors.map((e) => e.path)).toEqual(paths);
      expect(await countConnectors()).toBe(before);
    });

    it("400 for a bucket that is not the organization's, and for each malformed or repeated path; nothing is written", async () => {
      const before = await countConnectors();
      for (const bucket of [strangersBucketId, uuid()]) {
        const body = expectError(
          await admin.post("/data-connectors", { name: "Foreign", config: dataLake(bucket) }),
          400,
          "ValidationError",
        );
        expect(body.errors).toEqual([
          { path: "body.config.data_lake.bucket_id", message: "names no bucket of the organization" },
        ]);
      }
      const paths = expectError(
        await admin.post("/data-connectors", {
          name: "Bad paths",
          config: dataLake(bucketId, ["ok.md", "/root.md", "a/../b.md", "ok.md", "", "docs//"]),
        }),
        400,
        "ValidationError",
      );
      expect(paths.errors.map((e) => e.path)).toEqual(
        [1, 2, 3, 4, 5].map((i) => `body.config.data_lake.asset_paths[${i}]`),
      );
      expect(await countConnectors()).toBe(before);
    });
  });

  describe("one data connector", () => {
    let id: string;
    beforeAll(async () => {
      id = (await admin.post("/data-connectors", { name: "Ops", config: dataLake(bucketId, ["ops/"]) })).body
        .data_connector_id;
    });

    it("gets one data connector", async () => {
      const res = await admin.get(`/data-connectors/${id}`);
      expect(res.status).toBe(200);
      expect(dataConnectorSchema.parse(res.body)).toMatchObject({ data_connector_id: id, name: "Ops" });
    });

    it("updates only the fields sent; a config sets the bucket, and its paths when sent", async () => {
      const before = (await admin.get(`/data-connectors/${id}`)).body;
      await laterThan(before.updated_at);
      const renamed = await admin.patch(`/data-connectors/${id}`, { description: "Runbooks" });
      expect(renamed.status).toBe(200);
      expect(dataConnectorSchema.parse(renamed.body)).toEqual({
        ...before,
        description: "Runbooks",
        updated_at: renamed.body.updated_at,
      });
      expect(Date.parse(renamed.body.updated_at)).toBeGreaterThan(Date.parse(before.updated_at));
      const moved = await admin.patch(`/data-connectors/${id}`, { config: dataLake(otherBucketId) });
      expect(moved.body.config).toEqual(dataLake(otherBucketId, ["ops/"]));
      const narrowed = await admin.patch(`/data-connectors/${id}`, { config: dataLake(otherBucketId, ["runbooks/"]) });
      expect(narrowed.body.config).toEqual(dataLake(otherBucketId, ["runbooks/"]));
      expect((await admin.get(`/data-connectors/${id}`)).body).toEqual(narrowed.body);
    });

    it("a rejected update changes nothing, even its valid fields", async () => {
      const before = (await admin.get(`/data-connectors/${id}`)).body;
      const res = await admin.patch(`/data-connectors/${id}`, {
        name: "Renamed",
        config: dataLake(strangersBucketId, ["x.md"]),
      });
      expect(expectError(res, 400, "ValidationError").errors.map((e) => e.path)).toEqual([
        "body.config.data_lake.bucket_id",
      ]);
      expect((await admin.get(`/data-connectors/${id}`)).body).toEqual(before);
    });

    it("404 for another organization's data connector, which stays untouched", async () => {
      const before = (await admin.get(`/data-connectors/${id}`)).body;
      expectError(await stranger.get(`/data-connectors/${id}`), 404, "NotFound");
      expectError(await stranger.patch(`/data-connectors/${id}`, { name: "mine now" }), 404, "NotFound");
      expectError(await stranger.delete(`/data-connectors/${id}`), 404, "NotFound");
      expect((await admin.get(`/data-connectors/${id}`)).body).toEqual(before);
      expect((await stranger.get("/data-connectors")).body.data_connectors).toEqual([]);
    });

    it("404 for an unknown id, 400 for a malformed one", async () => {
      expectError(await admin.get(`/data-connectors/${uuid()}`), 404, "NotFound");
      expectError(await admin.patch(`/data-connectors/${uuid()}`, { name: "x" }), 404, "NotFound");
      expectError(await admin.delete(`/data-connectors/${uuid()}`), 404, "NotFound");
      expect(expectError(await admin.get("/data-connectors/123"), 400, "ValidationError").errors[0]?.path).toBe(
        "path.data_connector_id",
      );
    });

    it("deletes with 204; the knowledge bases naming it no longer do", async () => {
      const doomed = (await admin.post("/data-connectors", { name: "Doomed", config: dataLake(bucketId) })).body
        .data_connector_id;
      const kb = (await admin.post("/knowledge-bases", { name: "Fed", data_connector_ids: [id, doomed] })).body;
      const res = await admin.delete(`/data-connectors/${doomed}`);
      expect(res.status).toBe(204);
      expect(res.body).toBeUndefined();
      expectError(await admin.get(`/data-connectors/${doomed}`), 404, "NotFound");
      expectError(await admin.delete(`/data-connectors/${doomed}`), 404, "NotFound");
      const after = (await admin.get(`/knowledge-bases/${kb.knowledge_base_id}`)).body;
      expect(after.data_connector_ids).toEqual([id]);
      expect(Date.parse(after.updated_at)).toBeGreaterThanOrEqual(Date.parse(kb.updated_at));
    });
  });

  describe("ListDataConnectors", () => {
    let lister: ApiClient;
    let listerBucket: string;
    const made: string[] = [];
    beforeAll(async () => {
      lister = apiClient(stack.gatewayUrl, await signAccessToken({ sub: `dc-lister-${store}` }));
      listerBucket = (await lister.post("/buckets", { name: "mine" })).body.bucket_id;
      for (let i = 0; i < 3; i++)
        made.push(
          (await lister.post("/data-connectors", { name: `c${i}`, config: dataLake(listerBucket) })).body
            .data_connector_id,
        );
    });

    it("pages newest first", async () => {
      const first = await lister.get("/data-connectors?page_size=2");
      expect(dataConnectorListSchema.parse(first.body).pagination).toEqual({
        page_number: 1,
        page_size: 2,
        total_count: 3,
        total_pages: 2,
        next_page: 2,
      });
      const second = await lister.get("/api/data-connectors?page=2&page_size=2");
      expect(second.body.pagination).toMatchObject({ page_number: 2, previous_page: 1 });
      expect(
        [...first.body.data_connectors, ...second.body.data_connectors].map(
          (c: { data_connector_id: string }) => c.data_connector_id,
        ),
      ).toEqual([...made].reverse());
      for (const c of first.body.data_connectors)
        expect(Object.keys(c)).toEqual(expect.arrayContaining(clientRequiredKeys));
    });

    it.each(["page_size=0", "page_size=101", "page=0", "page=x"])("400 for %s", async (query) => {
      expectError(await lister.get(`/data-connectors?${query}`), 400, "ValidationError");
    });
  });
});
