import { setImmediate } from "node:timers/promises";
import { dateOf, newestFirstOrder, type Row, type SqliteHandle, sqliteLifecycle } from "@loom/store/sqlite";
import { nameFilterSql } from "./name-filter.ts";
import type { AssetRecord, BucketRecord, StorageStore } from "./port.ts";

/** Schema versions of the storage tables (kit `migrate`): append, never edit. */
const migrations = [
  `CREATE TABLE storage_buckets (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, name TEXT NOT NULL, created_by TEXT NOT NULL,
     created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, deleting_since INTEGER);
   CREATE INDEX storage_buckets_live_by_organization ON storage_buckets (organization_id, created_at DESC, id DESC) WHERE deleting_since IS NULL;
   CREATE INDEX storage_buckets_deleting ON storage_buckets (deleting_since, id) WHERE deleting_since IS NOT NULL;
   CREATE TABLE storage_assets (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, bucket_id TEXT NOT NULL, name TEXT NOT NULL,
     blob_size INTEGER, blob_content_type TEXT, blob_etag TEXT, presigned_put_until INTEGER,
     created_by TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
     UNIQUE (bucket_id, name));
   CREATE INDEX storage_assets_newest_first ON storage_assets (bucket_id, organization_id, created_at DESC, name DESC);
   CREATE INDEX storage_assets_bytes_by_organization ON storage_assets (organization_id, blob_size);`,
  // Generation-named blob objects (NULL: the asset's first key), and quota reservations of uploads committing.
  `ALTER TABLE storage_assets ADD COLUMN blob_generation TEXT;
   CREATE TABLE storage_byte_reservations (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, bytes INTEGER NOT NULL, at INTEGER NOT NULL);
   CREATE INDEX storage_byte_reservations_by_organization ON storage_byte_reservations (organization_id, at);`,
];

const bucketOf = (row: Row | undefined): BucketRecord | undefined =>
  row && {
    id: row.id as string,
    organizationId: row.organization_id as string,
    name: row.name as string,
    createdBy: row.created_by as string,
    createdAt: dateOf(row.created_at)!,
    updatedAt: dateOf(row.updated_at)!,
  };

const assetOf = (row: Row | undefined): AssetRecord | undefined =>
  row && {
    id: row.id as string,
    organizationId: row.organization_id as string,
    bucketId: row.bucket_id as string,
    name: row.name as string,
    ...(row.blob_size === null
      ? {}
      : {
          blob: {
            size: Number(row.blob_size),
            contentType: row.blob_content_type as string,
            etag: row.blob_etag as string,
            ...(row.blob_generation === null ? {} : { generation: row.blob_generation as string }),
          },
        }),
    ...(row.presigned_put_until === null ? {} : { presignedPutUntil: dateOf(row.presigned_put_until)! }),
    createdBy: row.created_by as string,
    createdAt: dateOf(row.created_at)!,
    updatedAt: dateOf(row.updated_at)!,
  };

/** Asset rows a bucket's deletion removes per statement. */
const deleteBatch = 1_000;

/**
 * SQLite adapter (the embedded store): `storage_buckets` and `storage_assets`,
 * times as epoch milliseconds, an asset's blob as its own columns (the quota
 * sums their sizes). A bucket being deleted keeps its row, with
 * `deleting_since` set, until the sweep forgets it.
 */
export function createSqliteStorageStore(handle: SqliteHandle): StorageStore {
  const { prepare } = handle;
  const live = "id = ? AND organization_id = ? AND deleting_since IS NULL";
  return {
    ...sqliteLifecycle(handle, "storage", migrations),

    async insertBucket(b) {
      prepare(
        "INSERT INTO storage_buckets (id, organization_id, name, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
      ).run(b.id, b.organizationId, b.name, b.createdBy, b.createdAt.getTime(), b.updatedAt.getTime());
    },
    getBucket: async (organizationId, id) =>
      bucketOf(prepare(`SELECT * FROM storage_buckets WHERE ${live}`).get(id, organizationId)),
    async renameBucket(organizationId, id, name, at) {
      return bucketOf(
        prepare(`UPDATE storage_buckets SET name = ?, updated_at = ? WHERE ${live} RETURNING *`).get(
          name,
          at.getTime(),
          id,
          organizationId,
        ),
      );
    },
    async listBuckets(organizationId, skip, limit) {
      const where = "organization_id = ? AND deleting_since IS NULL";
      const totalCount = Number(
        prepare(`SELECT count(*) AS n FROM storage_buckets WHERE ${where}`).get(organizationId)!.n,
      );
      const items = prepare(
        `SELECT * FROM storage_buckets WHERE ${where} ORDER BY ${newestFirstOrder} LIMIT ? OFFSET ?`,
      ).all(organizationId, limit, skip);
      return { items: items.map((row) => bucketOf(row)!), totalCount };
    },
    async markBucketDeleting(organizationId, id, at) {
      return (
        prepare(`UPDATE storage_buckets SET deleting_since = ? WHERE ${live}`).run(at.getTime(), id, organizationId)
          .changes === 1
      );
    },
    bucketsToSweep: async (before, limit) =>
      prepare("SELECT * FROM storage_buckets WHERE deleting_since < ? ORDER BY deleting_since, id LIMIT ?")
        .all(before.getTime(), limit)
        .map((row) => bucketOf(row)!),
    async forgetBucket(id) {
      // With any asset rows still left, so none outlives its bucket.
      handle.transaction(() => {
        prepare("DELETE FROM storage_assets WHERE bucket_id = ?").run(id);
        prepare("DELETE FROM storage_buckets WHERE id = ?").run(id);
      });
    },

    async upsertAsset(a) {
      const inserted = prepare(
        `INSERT INTO storage_assets (id, organization_id, bucket_id, name, blob_size, blob_content_type, blob_etag, blob_generation, presigned_put_until, created_by, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (bucket_id, name) DO NOTHING RETURNING *`,
      ).get(
        a.id,
        a.organizationId,
        a.bucketId,
        a.name,
        a.blob?.size ?? null,
        a.blob?.contentType ?? null,
        a.blob?.etag ?? null,
        a.blob?.generation ?? null,
        a.presignedPutUntil?.getTime() ?? null,
        a.createdBy,
        a.createdAt.getTime(),
        a.updatedAt.getTime(),
      );
      if (inserted) return { asset: assetOf(inserted)!, created: true };
      // Synchronous: nothing can delete the conflicting row between the two statements.
      return {
        asset: assetOf(
          prepare("SELECT * FROM storage_assets WHERE bucket_id = ? AND name = ?").get(a.bucketId, a.name),
        )!,
        created: false,
      };
    },
    getAsset: async (organizationId, bucketId, name) =>
      assetOf(
        prepare("SELECT * FROM storage_assets WHERE bucket_id = ? AND name = ? AND organization_id = ?").get(
          bucketId,
          name,
          organizationId,
        ),
      ),
    getAssetById: async (organizationId, bucketId, id) =>
      assetOf(
        prepare("SELECT * FROM storage_assets WHERE id = ? AND bucket_id = ? AND organization_id = ?").get(
          id,
          bucketId,
          organizationId,
        ),
      ),
    async listAssets(organizationId, bucketId, filter, skip, limit) {
      const names = nameFilterSql(filter);
      const where = `bucket_id = ? AND organization_id = ?${names.where}`;
      const totalCount = Number(
        prepare(`SELECT count(*) AS n FROM storage_assets WHERE ${where}`).get(
          bucketId,
          organizationId,
          ...names.params,
        )!.n,
      );
      const items = prepare(
        `SELECT * FROM storage_assets WHERE ${where} ORDER BY created_at DESC, name DESC LIMIT ? OFFSET ?`,
      ).all(bucketId, organizationId, ...names.params, limit, skip);
      return { items: items.map((row) => assetOf(row)!), totalCount };
    },
    async setAssetBlob(organizationId, bucketId, assetId, blob, at, presignedPutUntil) {
      return assetOf(
        prepare(
          `UPDATE storage_assets SET blob_size = ?, blob_content_type = ?, blob_etag = ?, updated_at = ?, presigned_put_until = ?
           WHERE id = ? AND bucket_id = ? AND organization_id = ? AND blob_generation IS ? RETURNING *`,
        ).get(
          blob.size,
          blob.contentType,
          blob.etag,
          at.getTime(),
          presignedPutUntil?.getTime() ?? null,
          assetId,
          bucketId,
          organizationId,
          blob.generation ?? null,
        ),
      );
    },
    async replaceAssetBlob(organizationId, bucketId, assetId, replacing, blob, at, presignedPutUntil) {
      // Synchronous: nothing runs between the read and the update.
      const previous = assetOf(
        prepare("SELECT * FROM storage_assets WHERE id = ? AND bucket_id = ? AND organization_id = ?").get(
          assetId,
          bucketId,
          organizationId,
        ),
      );
      if (!previous) return undefined;
      if ((previous.blob?.generation ?? null) !== replacing) return "moved";
      prepare(
        `UPDATE storage_assets SET blob_size = ?, blob_content_type = ?, blob_etag = ?, blob_generation = ?, updated_at = ?, presigned_put_until = ? WHERE id = ?`,
      ).run(
        blob.size,
        blob.contentType,
        blob.etag,
        blob.generation ?? null,
        at.getTime(),
        presignedPutUntil?.getTime() ?? null,
        assetId,
      );
      return { previous };
    },
    async assetsByIds(ids) {
      if (ids.length === 0) return [];
      // One statement per page of the sweep: ids as a JSON array, not a variable number of parameters.
      return prepare("SELECT * FROM storage_assets WHERE id IN (SELECT value FROM json_each(?))")
        .all(JSON.stringify(ids))
        .map((row) => assetOf(row)!);
    },
    async notePresignedPut(organizationId, bucketId, assetId, until) {
      prepare(
        `UPDATE storage_assets SET presigned_put_until = ?1
         WHERE id = ?2 AND bucket_id = ?3 AND organization_id = ?4 AND (presigned_put_until IS NULL OR presigned_put_until < ?1)`,
      ).run(until.getTime(), assetId, bucketId, organizationId);
    },
    deleteAsset: async (organizationId, bucketId, name) =>
      assetOf(
        prepare("DELETE FROM storage_assets WHERE bucket_id = ? AND name = ? AND organization_id = ? RETURNING *").get(
          bucketId,
          name,
          organizationId,
        ),
      ),
    async deleteAssetsOfBucket(bucketId) {
      // In batches, yielding between them: one statement over a big bucket holds the event loop (some 360 ms per 100,000 rows here).
      const batch = prepare(
        "DELETE FROM storage_assets WHERE rowid IN (SELECT rowid FROM storage_assets WHERE bucket_id = ? LIMIT ?)",
      );
      while (batch.run(bucketId, deleteBatch).changes === deleteBatch) await setImmediate();
    },
    async storedBytes(organizationId) {
      return Number(
        prepare("SELECT coalesce(sum(blob_size), 0) AS n FROM storage_assets WHERE organization_id = ?").get(
          organizationId,
        )!.n,
      );
    },
    async reserveBytes(r) {
      prepare("INSERT INTO storage_byte_reservations (id, organization_id, bytes, at) VALUES (?, ?, ?, ?)").run(
        r.id,
        r.organizationId,
        r.bytes,
        r.at.getTime(),
      );
    },
    async reservedBytes(organizationId, since) {
      return Number(
        prepare(
          "SELECT coalesce(sum(bytes), 0) AS n FROM storage_byte_reservations WHERE organization_id = ? AND at >= ?",
        ).get(organizationId, since.getTime())!.n,
      );
    },
    async releaseBytes(id) {
      prepare("DELETE FROM storage_byte_reservations WHERE id = ?").run(id);
    },
    async dropReservations(before) {
      prepare("DELETE FROM storage_byte_reservations WHERE at < ?").run(before.getTime());
    },
  };
}
