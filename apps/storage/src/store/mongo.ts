import { type Doc, fromDoc, isDuplicateKey, newestFirstSort, toDoc } from "@loom/store/mongo";
import type { Collection, Db } from "mongodb";
import { nameFilterQuery } from "./name-filter.ts";
import type { AssetRecord, BlobRecord, BucketRecord, ByteReservation, StorageStore } from "./port.ts";

type BucketDoc = Doc<BucketRecord> & { deletingSince?: Date };

/** MongoDB adapter: `buckets` and `assets`, scoped by organizationId in every query. */
export function createMongoStorageStore(
  db: Db,
  ping: () => Promise<boolean>,
  close: () => Promise<void>,
): StorageStore {
  const buckets: Collection<BucketDoc> = db.collection("buckets");
  const assets: Collection<Doc<AssetRecord>> = db.collection("assets");
  const liveBucket = (organizationId: string, id: string) => ({
    _id: id,
    organizationId,
    deletingSince: { $exists: false },
  });
  const bucketOf = (doc: BucketDoc | null): BucketRecord | undefined => {
    if (!doc) return undefined;
    const { deletingSince: _, ...rest } = doc;
    return fromDoc<BucketRecord>(rest);
  };
  const reservations: Collection<Doc<ByteReservation>> = db.collection("byte_reservations");
  const assetOf = (doc: Doc<AssetRecord> | null) => fromDoc<AssetRecord>(doc);
  /** A blob as stored: no `generation` field for the first key (the driver would store undefined as null). */
  const blobDoc = ({ generation, ...blob }: BlobRecord): BlobRecord =>
    generation === undefined ? blob : { ...blob, generation };
  /** Matches an asset whose bytes are in `generation`'s object; null: the first key (no blob, or one without a generation). */
  const bytesIn = (generation: string | null) => ({ "blob.generation": generation });

  return {
    async init() {
      await buckets.createIndex({ organizationId: 1, createdAt: -1, _id: -1 });
      await buckets.createIndex({ deletingSince: 1 }, { sparse: true });
      // One asset per name in a bucket: the upsert's guarantee under concurrent creates.
      await assets.createIndex({ bucketId: 1, name: 1 }, { unique: true });
      await assets.createIndex({ bucketId: 1, createdAt: -1, name: -1 });
      await assets.createIndex({ organizationId: 1 });
      await reservations.createIndex({ organizationId: 1, at: 1 });
    },
    ready: ping,
    close,

    async insertBucket(bucket) {
      await buckets.insertOne(toDoc(bucket));
    },
    getBucket: async (organizationId, id) => bucketOf(await buckets.findOne(liveBucket(organizationId, id))),
    async renameBucket(organizationId, id, name, at) {
      return bucketOf(
        await buckets.findOneAndUpdate(
          liveBucket(organizationId, id),
          { $set: { name, updatedAt: at } },
          { returnDocument: "after" },
        ),
      );
    },
    async listBuckets(organizationId, skip, limit) {
      const filter = { organizationId, deletingSince: { $exists: false } };
      const [docs, totalCount] = await Promise.all([
        buckets.find(filter).sort(newestFirstSort).skip(skip).limit(limit).toArray(),
        buckets.countDocuments(filter),
      ]);
      return { items: docs.map((d) => bucketOf(d)!), totalCount };
    },
    async markBucketDeleting(organizationId, id, at) {
      return (
        (await buckets.updateOne(liveBucket(organizationId, id), { $set: { deletingSince: at } })).modifiedCount === 1
      );
    },
    async bucketsToSweep(before, limit) {
      const docs = await buckets
        .find({ deletingSince: { $lt: before } })
        .sort({ deletingSince: 1 })
        .limit(limit)
        .toArray();
      return docs.map((d) => bucketOf(d)!);
    },
    async forgetBucket(id) {
      await buckets.deleteOne({ _id: id });
    },

    async upsertAsset(asset) {
      try {
        await assets.insertOne(toDoc(asset));
        return { asset, created: true };
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
        const existing = assetOf(await assets.findOne({ bucketId: asset.bucketId, name: asset.name }));
        if (!existing) throw error; // deleted in between: the caller may retry
        return { asset: existing, created: false };
      }
    },
    getAsset: async (organizationId, bucketId, name) =>
      assetOf(await assets.findOne({ bucketId, name, organizationId })),
    getAssetById: async (organizationId, bucketId, id) =>
      assetOf(await assets.findOne({ _id: id, bucketId, organizationId })),
    async listAssets(organizationId, bucketId, filter, skip, limit) {
      const query = { bucketId, organizationId, ...nameFilterQuery(filter) };
      const [docs, totalCount] = await Promise.all([
        assets.find(query).sort({ createdAt: -1, name: -1 }).skip(skip).limit(limit).toArray(),
        assets.countDocuments(query),
      ]);
      return { items: docs.map((d) => assetOf(d)!), totalCount };
    },
    async setAssetBlob(organizationId, bucketId, assetId, blob, at, presignedPutUntil) {
      return assetOf(
        await assets.findOneAndUpdate(
          { _id: assetId, bucketId, organizationId, ...bytesIn(blob.generation ?? null) },
          blobUpdate(blob, at, presignedPutUntil),
          { returnDocument: "after" },
        ),
      );
    },
    async replaceAssetBlob(organizationId, bucketId, assetId, replacing, blob, at, presignedPutUntil) {
      const previous = assetOf(
        await assets.findOneAndUpdate(
          { _id: assetId, bucketId, organizationId, ...bytesIn(replacing) },
          blobUpdate(blob, at, presignedPutUntil),
          { returnDocument: "before" },
        ),
      );
      if (previous) return { previous };
      return (await assets.countDocuments({ _id: assetId, bucketId, organizationId }, { limit: 1 })) > 0
        ? "moved"
        : undefined;
    },
    assetsByIds: async (ids) => (await assets.find({ _id: { $in: ids } }).toArray()).map((d) => assetOf(d)!),
    async notePresignedPut(organizationId, bucketId, assetId, until) {
      await assets.updateOne(
        {
          _id: assetId,
          bucketId,
          organizationId,
          $or: [{ presignedPutUntil: { $exists: false } }, { presignedPutUntil: { $lt: until } }],
        },
        { $set: { presignedPutUntil: until } },
      );
    },
    deleteAsset: async (organizationId, bucketId, name) =>
      assetOf(await assets.findOneAndDelete({ bucketId, name, organizationId })),
    async deleteAssetsOfBucket(bucketId) {
      await assets.deleteMany({ bucketId });
    },
    async storedBytes(organizationId) {
      const [sum] = await assets
        .aggregate<{ total: number }>([
          { $match: { organizationId } },
          { $group: { _id: null, total: { $sum: "$blob.size" } } },
        ])
        .toArray();
      return sum?.total ?? 0;
    },
    async reserveBytes(reservation) {
      await reservations.insertOne(toDoc(reservation));
    },
    async reservedBytes(organizationId, since) {
      const [sum] = await reservations
        .aggregate<{ total: number }>([
          { $match: { organizationId, at: { $gte: since } } },
          { $group: { _id: null, total: { $sum: "$bytes" } } },
        ])
        .toArray();
      return sum?.total ?? 0;
    },
    async releaseBytes(id) {
      await reservations.deleteOne({ _id: id });
    },
    async dropReservations(before) {
      await reservations.deleteMany({ at: { $lt: before } });
    },
  };

  function blobUpdate(blob: BlobRecord, at: Date, presignedPutUntil: Date | undefined) {
    return presignedPutUntil
      ? { $set: { blob: blobDoc(blob), updatedAt: at, presignedPutUntil } }
      : { $set: { blob: blobDoc(blob), updatedAt: at }, $unset: { presignedPutUntil: "" as const } };
  }
}
