import type { Page } from "@loom/contracts/paging";
import type { StoreLifecycle } from "@loom/store/open";

export interface BucketRecord {
  id: string;
  organizationId: string;
  name: string;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
}

/** What is known of an asset's stored bytes (absent until the first upload). */
export interface BlobRecord {
  size: number;
  contentType: string;
  /** Strong validator of these bytes (a fresh value per upload). */
  etag: string;
  /**
   * Which blob object holds them (assets.ts `blobKey`): each upload through
   * Loom writes a new one, and the record is switched to it once it is
   * stored. Absent: the asset's first key, `<organization>/<bucket>/<id>`
   * (records from before generations, and uploads through a presigned store URL).
   */
  generation?: string;
}

/**
 * Bytes an upload holds against its organization's quota while it commits
 * (upload-commit.ts): every commit counts the others', so concurrent uploads
 * never together pass the quota.
 */
export interface ByteReservation {
  id: string;
  organizationId: string;
  bytes: number;
  at: Date;
}

export interface AssetRecord {
  /** Names the asset's bytes in the blob store (`<organization>/<bucket>/<id>`): a re-created asset never sees old bytes. */
  id: string;
  organizationId: string;
  bucketId: string;
  name: string;
  blob?: BlobRecord;
  /**
   * Set while a presigned store URL for PUT may still be used: the upload
   * bypasses Loom, so reads compare the store's object with `blob` and take
   * it over (size, content type, updated_at) until this passes.
   */
  presignedPutUntil?: Date;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
}

export interface AssetFilter {
  /** Names starting with this; empty: any. */
  prefix: string;
  /** Names ending with this; empty: any. */
  postfix: string;
}

/**
 * Every read and write is scoped to one organization: another's buckets do
 * not exist. A bucket being deleted (`deletingSince`) is gone for every read
 * at once; `sweepable` hands it to the sweep that removes its assets and
 * bytes, then `forgetBucket`.
 */
export interface StorageStore extends StoreLifecycle {
  insertBucket(bucket: BucketRecord): Promise<void>;
  getBucket(organizationId: string, id: string): Promise<BucketRecord | undefined>;
  renameBucket(organizationId: string, id: string, name: string, at: Date): Promise<BucketRecord | undefined>;
  /** Newest first by created_at, ties by id; buckets being deleted left out. */
  listBuckets(organizationId: string, skip: number, limit: number): Promise<Page<BucketRecord>>;
  /** Hides the bucket from every read; false when there was none (or it was already going). */
  markBucketDeleting(organizationId: string, id: string, at: Date): Promise<boolean>;
  /** Buckets marked for deletion since before `before`, oldest first: the sweep's work. */
  bucketsToSweep(before: Date, limit: number): Promise<BucketRecord[]>;
  /** The bucket's last trace, once its assets and bytes are gone. */
  forgetBucket(id: string): Promise<void>;

  /** Inserts the asset unless the bucket already has one of that name; answers what is stored and whether it was created. */
  upsertAsset(asset: AssetRecord): Promise<{ asset: AssetRecord; created: boolean }>;
  getAsset(organizationId: string, bucketId: string, name: string): Promise<AssetRecord | undefined>;
  /** The asset of that id (what a signed URL names), whatever its name. */
  getAssetById(organizationId: string, bucketId: string, id: string): Promise<AssetRecord | undefined>;
  /** Newest first by created_at, ties by name. */
  listAssets(
    organizationId: string,
    bucketId: string,
    filter: AssetFilter,
    skip: number,
    limit: number,
  ): Promise<Page<AssetRecord>>;
  /**
   * Records what an upload through a presigned store URL stored in the
   * asset's current blob object: only while the asset's bytes are still in
   * `blob.generation`'s object (an upload through Loom may have moved them);
   * `presignedPutUntil` as given (undefined clears it). Undefined when that
   * asset is gone or its bytes moved.
   */
  setAssetBlob(
    organizationId: string,
    bucketId: string,
    assetId: string,
    blob: BlobRecord,
    at: Date,
    presignedPutUntil?: Date,
  ): Promise<AssetRecord | undefined>;
  /**
   * Commits an upload through Loom: the asset `assetId` (not a later asset of
   * the same name) now holds `blob`, in one atomic step, provided its bytes
   * are still in `replacing`'s object (a generation; null for the first key)
   * — else nothing changes ("moved"). Answers the record as it was before
   * (whose blob object the caller then deletes), or undefined when the asset is gone.
   */
  replaceAssetBlob(
    organizationId: string,
    bucketId: string,
    assetId: string,
    replacing: string | null,
    blob: BlobRecord,
    at: Date,
    presignedPutUntil?: Date,
  ): Promise<{ previous: AssetRecord } | "moved" | undefined>;
  /** The assets of these ids that exist, in any organization (the orphan sweep's question). */
  assetsByIds(ids: string[]): Promise<AssetRecord[]>;
  /** Notes that a presigned PUT URL for the asset may be used until `until` (kept if already later). */
  notePresignedPut(organizationId: string, bucketId: string, assetId: string, until: Date): Promise<void>;
  /** Removes the asset record and answers it (its bytes are the caller's to delete). */
  deleteAsset(organizationId: string, bucketId: string, name: string): Promise<AssetRecord | undefined>;
  /** Removes every asset record of a bucket (the sweep, after their bytes). */
  deleteAssetsOfBucket(bucketId: string): Promise<void>;
  /** Bytes the organization stores, over all its assets (for the quota). */
  storedBytes(organizationId: string): Promise<number>;
  reserveBytes(reservation: ByteReservation): Promise<void>;
  /** Bytes of the organization's reservations made since `since`. */
  reservedBytes(organizationId: string, since: Date): Promise<number>;
  releaseBytes(reservationId: string): Promise<void>;
  /** Forgets reservations made before `before` (left by a process that stopped while committing). */
  dropReservations(before: Date): Promise<void>;
}
