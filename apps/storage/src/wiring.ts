import { randomBytes } from "node:crypto";
import type { ServeBlob } from "@loom/blob-plane/exchange";
import type { RpcService } from "@loom/server/rpc-service";
import { openStore, type StoreSettings } from "@loom/store/open";
import type { Logger } from "@loom/telemetry/logger";
import { createAssetAccess } from "./assets.ts";
import { createDiskBlobStore } from "./blobs/disk.ts";
import type { BlobStore } from "./blobs/port.ts";
import type { StorageSettings } from "./config.ts";
import { createOrphanSweep } from "./orphans.ts";
import { createServeBlob } from "./serve-blob.ts";
import { createStorageService } from "./service.ts";
import { createBlobTokens } from "./signed-urls.ts";
import type { StorageStore } from "./store/port.ts";
import { createSqliteStorageStore } from "./store/sqlite.ts";
import { createBucketSweep, startPeriodically } from "./sweep.ts";
import { createUploadCommit, reservationLifetimeMs } from "./upload-commit.ts";

/** MongoDB when a URL is given, else SQLite. */
export const openStorageStore = (settings: StoreSettings): Promise<StorageStore> =>
  openStore(settings, {
    sqlite: createSqliteStorageStore,
    mongo: async (m) => (await import("./store/mongo.ts")).createMongoStorageStore(m.db, m.ping, m.close),
  });

/**
 * S3 when S3_BUCKET is set, else local disk under BLOB_DIR. The S3 adapter is
 * loaded only then: the AWS SDK alone adds some 60 MB to a process's memory.
 */
export async function openBlobStore(settings: StorageSettings): Promise<BlobStore> {
  const { S3_BUCKET } = settings;
  if (!S3_BUCKET) return createDiskBlobStore(settings.BLOB_DIR);
  const { createS3BlobStore } = await import("./blobs/s3.ts");
  return createS3BlobStore({ ...settings, S3_BUCKET });
}

export interface WiredStorage {
  service: RpcService;
  /** The data plane, for the gateway (in process) or the service's own HTTP server. */
  serveBlob: ServeBlob;
  /** Runs the orphan sweep now (it also runs at start and hourly); `graceMs` overrides ORPHAN_BLOB_GRACE_SECONDS. */
  sweepOrphans: (graceMs?: number) => Promise<number>;
  /** Where signed URLs point when they are the store's own (S3 with S3_PUBLIC_URLS); unset: Loom's own URLs. */
  signedUrlOrigin: string | undefined;
}

/** How often the orphan sweep walks the blob store. */
const orphanSweepEveryMs = 60 * 60_000;

/** Store + blob store → service and data plane: shared by main.ts, the all-in-one process and the tests. */
export async function wireStorage(
  store: StorageStore,
  blobs: BlobStore,
  settings: StorageSettings,
  deps: { logger: Logger; publicUrl: () => string; now?: () => Date },
): Promise<WiredStorage> {
  await store.init();
  await blobs.init();
  const now = deps.now ?? (() => new Date());
  if (!settings.BLOB_SIGNING_KEY)
    deps.logger.warn(
      "BLOB_SIGNING_KEY is not set: signed URLs are signed with a random key and stop working when this process stops",
    );
  const tokens = createBlobTokens(
    settings.BLOB_SIGNING_KEY ? new TextEncoder().encode(settings.BLOB_SIGNING_KEY) : randomBytes(32),
  );
  const access = createAssetAccess({ store, blobs, logger: deps.logger, now });
  const limits = { maxAssetBytes: settings.ASSET_MAX_BYTES, quotaBytes: settings.STORAGE_QUOTA_BYTES };
  const sweep = createBucketSweep({ store, blobs, logger: deps.logger, now });
  const sweepOrphans = createOrphanSweep({
    store,
    blobs,
    logger: deps.logger,
    now,
    graceMs: settings.ORPHAN_BLOB_GRACE_SECONDS * 1000,
  });
  // Presigned store URLs only when the store makes them and clients can reach it.
  const directUrls = blobs.presign !== undefined && settings.S3_PUBLIC_URLS;
  const sweeping = [
    sweep.start(),
    // Orphans and reservations left by a stop in the middle: at start, then hourly (the walk reads every blob's listing).
    startPeriodically(
      async () => {
        await store.dropReservations(new Date(now().getTime() - reservationLifetimeMs));
        await sweepOrphans();
      },
      orphanSweepEveryMs,
      deps.logger,
      "orphan blob sweep",
    ),
  ];
  const service = createStorageService({
    store,
    blobs,
    access,
    tokens,
    limits,
    urlTtlSeconds: settings.ASSET_URL_TTL_SECONDS,
    publicUrl: deps.publicUrl,
    sweepBucket: sweep.sweepBucket,
    directUrls,
    logger: deps.logger,
    now,
  });
  const commit = createUploadCommit({ store, limits, now });
  const serveBlob = createServeBlob({ store, blobs, access, tokens, limits, commit, directUrls });
  return {
    service: { ...service, close: () => (sweeping.forEach((s) => s.stop()), service.close()) },
    serveBlob,
    sweepOrphans,
    // A browser page that uploads to signed URLs (the console) must be allowed to reach this origin: presigning
    // is local (no request), so one probe gives the exact origin the store's URLs use (path or virtual-host style).
    signedUrlOrigin: directUrls ? new URL((await blobs.presign!("origin-probe", "PUT", 60)).url).origin : undefined,
  };
}
