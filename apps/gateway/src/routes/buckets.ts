import type { Bucket } from "@loom/proto/storage/v1/storage_pb";
import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import { isoTime, pagination } from "../json.ts";
import { defineOperation } from "../operation.ts";
import { bucketListSchema, bucketSchema } from "../schemas.ts";
import { boundedName, pageQuery, uuid } from "../validation.ts";

export function bucketJson(b: Bucket | undefined) {
  if (!b) throw new Error("the storage service answered without a bucket");
  return {
    bucket_id: b.bucketId,
    organization_id: b.organizationId,
    name: b.name,
    created_at: isoTime(b.createdAt),
    created_by: b.createdBy,
    updated_at: isoTime(b.updatedAt),
  };
}

/** Buckets of named assets (docs/behaviour.md §7). */
export function bucketOperations({ storage }: ServiceClients) {
  const bucketPath = z.object({ bucket_id: uuid });
  const bucketName = boundedName(256).meta({ description: "The bucket's name" });
  return [
    defineOperation({
      id: "ListBuckets",
      method: "GET",
      path: "/buckets",
      summary: "The organization's buckets, newest first",
      query: pageQuery,
      response: { status: 200, description: "A page of buckets", schema: bucketListSchema },
      async handle({ query, call }) {
        const res = await storage.listBuckets({ page: { page: query.page, pageSize: query.page_size } }, call);
        return { buckets: res.buckets.map(bucketJson), pagination: pagination(res.page) };
      },
    }),
    defineOperation({
      id: "CreateBucket",
      method: "POST",
      path: "/buckets",
      summary: "Creates a bucket",
      body: { schema: z.object({ name: bucketName }), required: true },
      response: { status: 201, description: "The new bucket", schema: bucketSchema },
      handle: async ({ body, call }) => bucketJson((await storage.createBucket({ name: body.name }, call)).bucket),
    }),
    defineOperation({
      id: "GetBucket",
      method: "GET",
      path: "/buckets/{bucket_id}",
      summary: "One bucket",
      params: bucketPath,
      response: { status: 200, description: "The bucket", schema: bucketSchema },
      handle: async ({ params, call }) =>
        bucketJson((await storage.getBucket({ bucketId: params.bucket_id }, call)).bucket),
    }),
    defineOperation({
      id: "UpdateBucket",
      method: "PATCH",
      path: "/buckets/{bucket_id}",
      summary: "Renames a bucket when a name is given",
      params: bucketPath,
      body: { schema: z.object({ name: bucketName.optional() }), required: false },
      response: { status: 200, description: "The bucket as it is now", schema: bucketSchema },
      handle: async ({ params, body, call }) =>
        bucketJson((await storage.updateBucket({ bucketId: params.bucket_id, name: body?.name }, call)).bucket),
    }),
    defineOperation({
      id: "DeleteBucket",
      method: "DELETE",
      path: "/buckets/{bucket_id}",
      summary: "Deletes a bucket with all its assets and their bytes",
      params: bucketPath,
      response: { status: 204, description: "Deleted" },
      handle: async ({ params, call }) => void (await storage.deleteBucket({ bucketId: params.bucket_id }, call)),
    }),
  ];
}
