import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { blobPathPrefix } from "@loom/blob-plane/exchange";
import { assetNameProblem } from "@loom/contracts/asset-names";
import { invalidArgument, notFound } from "@loom/contracts/errors";
import { newId } from "@loom/contracts/ids";
import { pageInfo, pageWindow } from "@loom/contracts/paging";
import { nameProblem } from "@loom/contracts/text";
import { AssetUrlOperation, StorageService } from "@loom/proto/storage/v1/storage_pb";
import { requirePrincipal } from "@loom/server/principal";
import { type RpcService, storeBackedService } from "@loom/server/rpc-service";
import type { Logger } from "@loom/telemetry/logger";
import { type AssetAccess, blobKey, type StorageLimits } from "./assets.ts";
import type { BlobStore } from "./blobs/port.ts";
import type { BlobOperation, BlobTokens } from "./signed-urls.ts";
import type { AssetRecord, BucketRecord, StorageStore } from "./store/port.ts";

/** include_contents answers at most this many bytes (docs/behaviour.md §7); larger assets are read through a GET URL. */
export const maxInlineContentsBytes = 1024 * 1024;

/** S3's own limit on one PUT: a presigned PUT URL cannot let through more than this, whatever Loom's limit says. */
const s3SinglePutBytes = 5 * 1024 ** 3;

export interface StorageServiceDeps {
  store: StorageStore;
  blobs: BlobStore;
  access: AssetAccess;
  tokens: BlobTokens;
  limits: StorageLimits;
  /** How long a signed URL works. */
  urlTtlSeconds: number;
  /** Where clients reach Loom: signed URLs are `<publicUrl>/blobs/<token>`. */
  publicUrl: () => string;
  /** Removes a bucket's bytes and assets, then the bucket itself. */
  sweepBucket: (bucket: BucketRecord) => Promise<void>;
  /** The blob store presigns URLs that clients can reach (S3 with S3_PUBLIC_URLS). */
  directUrls: boolean;
  logger: Logger;
  now: () => Date;
}

function checkAssetName(path: string, name: string): void {
  const problem = assetNameProblem(name);
  if (problem) throw invalidArgument([{ path, message: problem }]);
}

const operationsOf: Record<AssetUrlOperation, BlobOperation[]> = {
  [AssetUrlOperation.UNSPECIFIED]: ["PUT", "GET"],
  [AssetUrlOperation.PUT]: ["PUT"],
  [AssetUrlOperation.GET]: ["GET"],
};

export function createStorageService(deps: StorageServiceDeps): RpcService {
  const { store, blobs, access, tokens, limits, now, logger } = deps;

  /**
   * A presigned store URL for one operation, when the store can make one and
   * the store itself enforces Loom's limits: an upload straight to S3 cannot be
   * cut off at Loom's size limit or quota, so a PUT is presigned only when the
   * limit is S3's own (5 GiB) and there is no quota (docs/decisions.md, "Storage").
   */
  function presignable(operations: BlobOperation[]): boolean {
    if (!deps.directUrls || operations.length !== 1) return false;
    return operations[0] === "GET" || (limits.maxAssetBytes >= s3SinglePutBytes && limits.quotaBytes === undefined);
  }

  const impl: ServiceImpl<typeof StorageService> = {
    async createBucket(req, ctx) {
      const principal = requirePrincipal(ctx);
      const problem = nameProblem(req.name, 1, 256);
      if (problem) throw invalidArgument([{ path: "body.name", message: problem }]);
      const at = now();
      const bucket: BucketRecord = {
        id: newId(),
        organizationId: principal.organizationId,
        name: req.name,
        createdBy: principal.userId,
        createdAt: at,
        updatedAt: at,
      };
      await store.insertBucket(bucket);
      return { bucket: bucketMessage(bucket) };
    },

    async getBucket(req, ctx) {
      return { bucket: bucketMessage(await access.bucket(requirePrincipal(ctx).organizationId, req.bucketId)) };
    },

    async updateBucket(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      if (req.name === undefined) return { bucket: bucketMessage(await access.bucket(organizationId, req.bucketId)) };
      const problem = nameProblem(req.name, 1, 256);
      if (problem) throw invalidArgument([{ path: "body.name", message: problem }]);
      const bucket = await access.bucket(organizationId, req.bucketId);
      const renamed = await store.renameBucket(organizationId, bucket.id, req.name, now());
      if (!renamed) throw notFound("bucket");
      return { bucket: bucketMessage(renamed) };
    },

    async deleteBucket(req, ctx) {
      const bucket = await access.bucket(requirePrincipal(ctx).organizationId, req.bucketId);
      // Gone for the API at once; its bytes and assets go now, or by the sweep if this process stops first.
      if (!(await store.markBucketDeleting(bucket.organizationId, bucket.id, now()))) throw notFound("bucket");
      await deps.sweepBucket(bucket);
      return {};
    },

    async listBuckets(req, ctx) {
      const window = pageWindow(req.page);
      const { items, totalCount } = await store.listBuckets(
        requirePrincipal(ctx).organizationId,
        window.skip,
        window.pageSize,
      );
      return { buckets: items.map(bucketMessage), page: pageInfo(window, totalCount) };
    },

    async createAsset(req, ctx) {
      const principal = requirePrincipal(ctx);
      checkAssetName("body.name", req.name);
      const bucket = await access.bucket(principal.organizationId, req.bucketId);
      const at = now();
      const { asset } = await store.upsertAsset({
        id: newId(),
        organizationId: principal.organizationId,
        bucketId: bucket.id,
        name: req.name,
        createdBy: principal.userId,
        createdAt: at,
        updatedAt: at,
      });
      return { asset: assetMessage(asset) };
    },

    async getAsset(req, ctx) {
      checkAssetName("path.name", req.name);
      // An upload may move the asset to new bytes (and remove the old) between the record and the read: read both again.
      for (let attempt = 0; attempt < 3; attempt++) {
        const { asset } = await access.asset(requirePrincipal(ctx).organizationId, req.bucketId, req.name);
        if (!req.includeContents || !asset.blob) return { asset: assetMessage(asset) };
        if (asset.blob.size > maxInlineContentsBytes) {
          throw invalidArgument([
            {
              path: "query.include_contents",
              message: `the asset holds ${asset.blob.size} bytes, over the ${maxInlineContentsBytes} that include_contents returns: download it with a GET URL`,
            },
          ]);
        }
        const contents = await readSmall(blobs, asset);
        if (contents) return { asset: { ...assetMessage(asset), contents } };
      }
      throw new ConnectError("the asset keeps changing: try again", Code.Unavailable);
    },

    async deleteAsset(req, ctx) {
      checkAssetName("path.name", req.name);
      const { organizationId } = requirePrincipal(ctx);
      const bucket = await access.bucket(organizationId, req.bucketId);
      const deleted = await store.deleteAsset(organizationId, bucket.id, req.name);
      if (!deleted) throw notFound("asset");
      await blobs.delete(blobKey(deleted));
      return {};
    },

    async listAssets(req, ctx) {
      const window = pageWindow(req.page);
      const { organizationId } = requirePrincipal(ctx);
      const bucket = await access.bucket(organizationId, req.bucketId);
      const { items, totalCount } = await store.listAssets(
        organizationId,
        bucket.id,
        { prefix: req.prefix, postfix: req.postfix },
        window.skip,
        window.pageSize,
      );
      const assets = await Promise.all(items.map((a) => access.reconciled(a)));
      return { assets: assets.map(assetMessage), page: pageInfo(window, totalCount) };
    },

    async createAssetUrl(req, ctx) {
      checkAssetName("path.name", req.name);
      const { asset } = await access.asset(requirePrincipal(ctx).organizationId, req.bucketId, req.name);
      const operations = operationsOf[req.operation] ?? operationsOf[AssetUrlOperation.UNSPECIFIED];
      // Whole seconds, as the token carries it: the URL works until exactly `expires_at`.
      const expiresAt = new Date(Math.floor(now().getTime() / 1000 + deps.urlTtlSeconds) * 1000);
      if (presignable(operations)) {
        const [operation] = operations as [BlobOperation];
        if (operation === "PUT")
          await store.notePresignedPut(asset.organizationId, asset.bucketId, asset.id, expiresAt);
        const presigned = await blobs.presign!(blobKey(asset), operation, deps.urlTtlSeconds);
        return { url: presigned.url, headers: presigned.headers, expiresAt: timestampFromDate(expiresAt) };
      }
      const token = await tokens.sign({
        organizationId: asset.organizationId,
        bucketId: asset.bucketId,
        assetId: asset.id,
        operations,
        expiresAt,
      });
      return {
        url: `${deps.publicUrl().replace(/\/+$/, "")}${blobPathPrefix}${token}`,
        headers: {},
        expiresAt: timestampFromDate(expiresAt),
      };
    },
  };

  logger.debug({ blobs: blobs.kind }, "storage service ready");
  return storeBackedService("storage", (router) => router.service(StorageService, impl), {
    ready: async () => (await Promise.all([store.ready(), blobs.ready().catch(() => false)])).every(Boolean),
    close: async () => {
      await blobs.close();
      await store.close();
    },
  });
}

/** The bytes of an asset already known to be small, for include_contents. */
async function readSmall(blobs: BlobStore, asset: AssetRecord): Promise<Uint8Array | undefined> {
  const stream = await blobs.read(blobKey(asset));
  if (!stream) return undefined;
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    total += (chunk as Buffer).length;
    if (total > maxInlineContentsBytes) {
      stream.destroy();
      throw invalidArgument([
        {
          path: "query.include_contents",
          message: `the asset holds over ${maxInlineContentsBytes} bytes: download it with a GET URL`,
        },
      ]);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function bucketMessage(b: BucketRecord) {
  return {
    bucketId: b.id,
    organizationId: b.organizationId,
    name: b.name,
    createdBy: b.createdBy,
    createdAt: timestampFromDate(b.createdAt),
    updatedAt: timestampFromDate(b.updatedAt),
  };
}

function assetMessage(a: AssetRecord) {
  return {
    name: a.name,
    organizationId: a.organizationId,
    bucketId: a.bucketId,
    size: a.blob ? BigInt(a.blob.size) : undefined,
    contentType: a.blob?.contentType,
    createdBy: a.createdBy,
    createdAt: timestampFromDate(a.createdAt),
    updatedAt: timestampFromDate(a.updatedAt),
  };
}
