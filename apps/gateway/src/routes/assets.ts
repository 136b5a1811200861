import { assetNamePatternSource } from "@loom/contracts/text";
import { type Asset, AssetUrlOperation } from "@loom/proto/storage/v1/storage_pb";
import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import { isoTime, pagination } from "../json.ts";
import { defineOperation } from "../operation.ts";
import { assetListSchema, assetSchema, assetUrlSchema } from "../schemas.ts";
import { booleanParam, pageQuery, uuid } from "../validation.ts";

/**
 * An asset name. Its rules (docs/behaviour.md §7) are the storage service's to
 * check, in one place: it answers INVALID_ARGUMENT at `path.name` or
 * `body.name`. Here they are only documented (so a schema fuzzer knows
 * which names are good).
 */
const assetName = z.string().meta({
  minLength: 1,
  maxLength: 256,
  pattern: assetNamePatternSource,
  description:
    "1 to 256 characters; may contain `/` between segments; no `.`, `..` or empty segment (`a//b`, a trailing `/`), backslash, control character or leading `/`",
});

// ignoreBOM: a leading byte-order mark is part of the bytes, kept in the string.
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Stored bytes in JSON (docs/behaviour.md §7): valid UTF-8 as a string, anything else in base64. */
export function contentsJson(bytes: Uint8Array): string | { encoding: "base64"; data: string } {
  try {
    return utf8.decode(bytes);
  } catch {
    return {
      encoding: "base64",
      data: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64"),
    };
  }
}

export function assetJson(a: Asset | undefined) {
  if (!a) throw new Error("the storage service answered without an asset");
  return {
    name: a.name,
    organization_id: a.organizationId,
    bucket_id: a.bucketId,
    ...(a.size !== undefined ? { size: Number(a.size) } : {}),
    ...(a.contents !== undefined ? { contents: contentsJson(a.contents) } : {}),
    created_at: isoTime(a.createdAt),
    created_by: a.createdBy,
    updated_at: isoTime(a.updatedAt),
  };
}

const urlOperations = { PUT: AssetUrlOperation.PUT, GET: AssetUrlOperation.GET } as const;

/**
 * Assets of a bucket and signed URLs for their bytes (docs/behaviour.md §7).
 * Names contain `/`: the routes with a name take the rest of the path as it.
 */
export function assetOperations({ storage }: ServiceClients) {
  const bucketPath = z.object({ bucket_id: uuid });
  const assetPath = z.object({ bucket_id: uuid, name: assetName });
  return [
    defineOperation({
      id: "ListAssets",
      method: "GET",
      path: "/buckets/{bucket_id}/assets",
      summary: "A bucket's assets, newest first, optionally only names with a prefix and/or a postfix",
      params: bucketPath,
      query: pageQuery.extend({
        prefix: z.string().optional().meta({ description: "Only assets whose name starts with this, e.g. `dir/`" }),
        postfix: z.string().optional().meta({ description: "Only assets whose name ends with this, e.g. `.pdf`" }),
      }),
      response: { status: 200, description: "A page of assets, with the filters as given", schema: assetListSchema },
      async handle({ params, query, call }) {
        const res = await storage.listAssets(
          {
            bucketId: params.bucket_id,
            page: { page: query.page, pageSize: query.page_size },
            prefix: query.prefix,
            postfix: query.postfix,
          },
          call,
        );
        return {
          assets: res.assets.map(assetJson),
          pagination: pagination(res.page),
          ...(query.prefix !== undefined ? { prefix: query.prefix } : {}),
          ...(query.postfix !== undefined ? { postfix: query.postfix } : {}),
        };
      },
    }),
    defineOperation({
      id: "CreateAsset",
      method: "PUT",
      path: "/buckets/{bucket_id}/assets",
      summary: "Creates the asset, or answers the existing one of that name (an upsert: 201 either way)",
      params: bucketPath,
      body: { schema: z.object({ name: assetName }), required: true },
      response: { status: 201, description: "The asset", schema: assetSchema },
      handle: async ({ params, body, call }) =>
        assetJson((await storage.createAsset({ bucketId: params.bucket_id, name: body.name }, call)).asset),
    }),
    defineOperation({
      id: "GetAsset",
      method: "GET",
      path: "/buckets/{bucket_id}/assets/{name}",
      restOfPath: "name",
      summary: "One asset; with include_contents=true, its bytes too (at most 1 MiB)",
      params: assetPath,
      query: z.object({
        include_contents: booleanParam(
          false,
          "Also answer the bytes, in `contents` (text as is, anything else base64)",
        ),
      }),
      response: { status: 200, description: "The asset", schema: assetSchema },
      handle: async ({ params, query, call }) =>
        assetJson(
          (
            await storage.getAsset(
              { bucketId: params.bucket_id, name: params.name, includeContents: query.include_contents },
              call,
            )
          ).asset,
        ),
    }),
    defineOperation({
      id: "DeleteAsset",
      method: "DELETE",
      path: "/buckets/{bucket_id}/assets/{name}",
      restOfPath: "name",
      summary: "Deletes an asset and its bytes",
      params: assetPath,
      response: { status: 204, description: "Deleted" },
      handle: async ({ params, call }) =>
        void (await storage.deleteAsset({ bucketId: params.bucket_id, name: params.name }, call)),
    }),
    defineOperation({
      id: "CreateAssetUrl",
      method: "POST",
      path: "/buckets/{bucket_id}/asset-urls/{name}",
      restOfPath: "name",
      summary:
        "A URL to upload (PUT) or download (GET) the asset's bytes without the bearer credential, for a limited time; without an operation, good for both",
      params: assetPath,
      body: {
        schema: z.object({
          operation: z.enum(["PUT", "GET"]).optional().meta({
            description: "PUT: a URL to upload the bytes to; GET: one to download them from; absent: one for both",
          }),
        }),
        required: false,
      },
      response: { status: 200, description: "The URL and the headers to send with it", schema: assetUrlSchema },
      async handle({ params, body, call }) {
        const operation = body?.operation ? urlOperations[body.operation] : AssetUrlOperation.UNSPECIFIED;
        const res = await storage.createAssetUrl({ bucketId: params.bucket_id, name: params.name, operation }, call);
        return { url: res.url, headers: { ...res.headers }, expires_at: isoTime(res.expiresAt) };
      },
    }),
  ];
}
