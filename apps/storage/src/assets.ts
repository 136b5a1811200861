import { randomBytes } from "node:crypto";
import { notFound } from "@loom/contracts/errors";
import { isUuid } from "@loom/contracts/ids";
import type { Logger } from "@loom/telemetry/logger";
import { type BlobStore, blobKeyPattern } from "./blobs/port.ts";
import { maxAssetUrlTtlSeconds } from "./config.ts";
import { type BlobGrant, urlNotValid } from "./signed-urls.ts";
import type { AssetRecord, BlobRecord, BucketRecord, StorageStore } from "./store/port.ts";
import { updateTime } from "./update-time.ts";

/** Limits of what may be stored (README, "Storage"). */
export interface StorageLimits {
  /** Largest asset, in bytes. */
  maxAssetBytes: number;
  /** Bytes one organization may store; undefined: no quota. */
  quotaBytes?: number | undefined;
}

/**
 * How long after a presigned PUT URL expires its upload may still be arriving:
 * S3 checks the expiry when an upload starts, and a 5 GiB upload can take a while.
 */
export const presignedUploadGraceMs = 60 * 60 * 1000;

/**
 * Where an asset's bytes live in the blob store: by ids, so a re-created
 * asset never sees old bytes, and by generation, so an upload writes a new
 * object and never changes the one the record describes (crash consistency:
 * docs/decisions.md, "Storage"). No generation: the asset's first key.
 */
export const blobKey = (
  asset: Pick<AssetRecord, "organizationId" | "bucketId" | "id"> & {
    blob?: Pick<BlobRecord, "generation"> | undefined;
  },
) =>
  `${asset.organizationId}/${asset.bucketId}/${asset.id}${asset.blob?.generation ? `.${asset.blob.generation}` : ""}`;

/** The asset id a blob key names (the orphan sweep's question); undefined for anything else in the store. */
export const assetIdOfBlobKey = (key: string): string | undefined => blobKeyPattern.exec(key)?.[3];

/** A fresh generation for an upload's blob object. */
export const newGeneration = () => randomBytes(8).toString("hex");
export const bucketBlobPrefix = (bucket: Pick<BucketRecord, "organizationId" | "id">) =>
  `${bucket.organizationId}/${bucket.id}/`;

/** The lookups the RPCs and the data plane share: live buckets, assets as they are now. */
export function createAssetAccess(deps: { store: StorageStore; blobs: BlobStore; logger: Logger; now: () => Date }) {
  const { store, blobs, logger, now } = deps;

  async function bucket(organizationId: string, bucketId: string): Promise<BucketRecord> {
    const found = isUuid(bucketId) ? await store.getBucket(organizationId, bucketId.toLowerCase()) : undefined;
    if (!found) throw notFound("bucket");
    return found;
  }

  /**
   * An upload through a presigned store URL bypasses Loom: while one may be
   * arriving, what the store holds wins over what was recorded (size,
   * content type, updated_at).
   */
  async function reconciled(asset: AssetRecord): Promise<AssetRecord> {
    if (!asset.presignedPutUntil) return asset;
    const stored = await blobs.stat(blobKey(asset));
    const stillOpen = now().getTime() < asset.presignedPutUntil.getTime() + presignedUploadGraceMs;
    const changed = stored && stored.etag !== asset.blob?.etag;
    if (!changed && stillOpen) return asset;
    // Same object, same generation: what the presigned upload put there.
    const generation = asset.blob?.generation ? { generation: asset.blob.generation } : {};
    const blob = stored
      ? { size: stored.size, contentType: stored.contentType, etag: stored.etag, ...generation }
      : asset.blob;
    if (!blob) return asset; // nothing uploaded, nothing to record
    const updated = await store.setAssetBlob(
      asset.organizationId,
      asset.bucketId,
      asset.id,
      blob,
      changed ? updateTime(asset.updatedAt, stored.updatedAt) : asset.updatedAt,
      stillOpen ? asset.presignedPutUntil : undefined,
    );
    if (changed) logger.debug({ asset: asset.id, size: blob.size }, "took over an upload made through a presigned URL");
    return updated ?? asset;
  }

  async function asset(
    organizationId: string,
    bucketId: string,
    name: string,
  ): Promise<{ bucket: BucketRecord; asset: AssetRecord }> {
    const found = await bucket(organizationId, bucketId);
    const stored = await store.getAsset(organizationId, found.id, name);
    if (!stored) throw notFound("asset");
    return { bucket: found, asset: await reconciled(stored) };
  }

  /**
   * The asset a signed URL was made for: by its id, so after DeleteAsset and
   * CreateAsset of the same name the old URL finds nothing (404). A token made
   * before tokens carried the id names the asset by name; it is honoured only
   * for an asset that provably existed when the token was made — created at
   * least the longest URL lifetime before the token expires — and is refused
   * otherwise, as any URL that does not grant the request.
   */
  async function granted(grant: BlobGrant): Promise<AssetRecord> {
    const found = await bucket(grant.organizationId, grant.bucketId);
    if ("legacyName" in grant.asset) {
      const stored = await store.getAsset(found.organizationId, found.id, grant.asset.legacyName);
      if (!stored) throw notFound("asset");
      if (stored.createdAt.getTime() > grant.expiresAt.getTime() - maxAssetUrlTtlSeconds * 1000) throw urlNotValid();
      return reconciled(stored);
    }
    const stored = await store.getAssetById(found.organizationId, found.id, grant.asset.id);
    if (!stored) throw notFound("asset");
    return reconciled(stored);
  }

  return { bucket, asset, reconciled, granted };
}

export type AssetAccess = ReturnType<typeof createAssetAccess>;
