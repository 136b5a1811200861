import { inMemoryLifecycle } from "@loom/kit/in-memory-store";
import { newestFirst } from "@loom/kit/paging";
import { plainCopy as copy } from "@loom/kit/plain-copy";
import type { AssetRecord, BucketRecord, StorageStore } from "./port.ts";
import { nameMatches } from "./name-filter.ts";

type StoredBucket = BucketRecord & { deletingSince?: Date };

/** The embedded default and the fast test double. Assets are keyed by bucket, then name. */
export function createMemoryStorageStore(): StorageStore {
  const buckets = new Map<string, StoredBucket>();
  const assets = new Map<string, Map<string, AssetRecord>>();
  const live = (organizationId: string, id: string) => {
    const found = buckets.get(id);
    return found?.organizationId === organizationId && !found.deletingSince ? found : undefined;
  };
  const assetsOf = (bucketId: string) => {
    let names = assets.get(bucketId);
    if (!names) assets.set(bucketId, (names = new Map()));
    return names;
  };
  const owned = (organizationId: string, bucketId: string, name: string) => {
    const found = assets.get(bucketId)?.get(name);
    return found?.organizationId === organizationId ? found : undefined;
  };
  const byId = (organizationId: string, bucketId: string, assetId: string) =>
    [...(assets.get(bucketId)?.values() ?? [])].find((a) => a.id === assetId && a.organizationId === organizationId);
  const withoutMark = ({ deletingSince: _, ...bucket }: StoredBucket): BucketRecord => copy(bucket);

  return {
    ...inMemoryLifecycle,
    async insertBucket(bucket) {
      buckets.set(bucket.id, copy(bucket));
    },
    getBucket: async (organizationId, id) => {
      const found = live(organizationId, id);
      return found && withoutMark(found);
    },
    async renameBucket(organizationId, id, name, at) {
      const found = live(organizationId, id);
      if (!found) return undefined;
      Object.assign(found, { name, updatedAt: at });
      return withoutMark(found);
    },
    async listBuckets(organizationId, skip, limit) {
      const all = [...buckets.values()].filter((b) => b.organizationId === organizationId && !b.deletingSince).sort(newestFirst);
      return { items: all.slice(skip, skip + limit).map(withoutMark), totalCount: all.length };
    },
    async markBucketDeleting(organizationId, id, at) {
      const found = live(organizationId, id);
      if (!found) return false;
      found.deletingSince = at;
      return true;
    },
    bucketsToSweep: async (before, limit) =>
      [...buckets.values()]
        .filter((b) => b.deletingSince && b.deletingSince < before)
        .sort((a, b) => a.deletingSince!.getTime() - b.deletingSince!.getTime())
        .slice(0, limit)
        .map(withoutMark),
    async forgetBucket(id) {
      buckets.delete(id);
      assets.delete(id);
    },

    async upsertAsset(asset) {
      const names = assetsOf(asset.bucketId);
      const existing = names.get(asset.name);
      if (existing) return { asset: copy(existing), created: false };
      names.set(asset.name, copy(asset));
      return { asset: copy(asset), created: true };
    },
    getAsset: async (organizationId, bucketId, name) => copy(owned(organizationId, bucketId, name)),
    async listAssets(organizationId, bucketId, filter, skip, limit) {
      const all = [...(assets.get(bucketId)?.values() ?? [])]
        .filter((a) => a.organizationId === organizationId && nameMatches(a.name, filter))
        .sort((a, b) => newestFirst({ createdAt: a.createdAt, id: a.name }, { createdAt: b.createdAt, id: b.name }));
      return { items: copy(all.slice(skip, skip + limit)), totalCount: all.length };
    },
    async setAssetBlob(organizationId, bucketId, assetId, blob, at, presignedPutUntil) {
      const found = byId(organizationId, bucketId, assetId);
      if (!found) return undefined;
      Object.assign(found, { blob: copy(blob), updatedAt: at, presignedPutUntil });
      if (!presignedPutUntil) delete found.presignedPutUntil;
      return copy(found);
    },
    async notePresignedPut(organizationId, bucketId, assetId, until) {
      const found = byId(organizationId, bucketId, assetId);
      if (found && !(found.presignedPutUntil && found.presignedPutUntil >= until)) found.presignedPutUntil = until;
    },
    async deleteAsset(organizationId, bucketId, name) {
      const found = owned(organizationId, bucketId, name);
      if (!found) return undefined;
      assets.get(bucketId)!.delete(name);
      return copy(found);
    },
    async deleteAssetsOfBucket(bucketId) {
      assets.delete(bucketId);
    },
    async storedBytes(organizationId) {
      let total = 0;
      for (const names of assets.values()) for (const a of names.values()) if (a.organizationId === organizationId) total += a.blob?.size ?? 0;
      return total;
    },
  };
}
