import type { Logger } from "@loom/telemetry/logger";
import { assetIdOfBlobKey, blobKey } from "./assets.ts";
import type { BlobStore } from "./blobs/port.ts";
import type { StorageStore } from "./store/port.ts";

/**
 * Removes blob objects no asset record names: the old bytes of an upload, or
 * the bytes of a deleted asset, left by a process that stopped before
 * removing them, and an upload's new bytes left uncommitted; then uploads
 * left unfinished (S3's multipart uploads). Only objects
 * last written before `graceMs` ago: a younger one may be an upload about to
 * commit (an upload's object can be dated from its start, as S3's multipart
 * uploads are, so the grace outlasts the longest upload).
 */
export function createOrphanSweep(deps: {
  store: StorageStore;
  blobs: BlobStore;
  logger: Logger;
  now: () => Date;
  graceMs: number;
}) {
  const { store, blobs, logger } = deps;

  return async function sweepOrphans(graceMs = deps.graceMs): Promise<number> {
    const before = deps.now().getTime() - graceMs;
    let removed = 0;
    for await (const page of blobs.list()) {
      const old = page.filter((blob) => blob.updatedAt.getTime() <= before);
      if (old.length === 0) continue;
      const ids = [...new Set(old.map((blob) => assetIdOfBlobKey(blob.key)!))];
      const named = new Set((await store.assetsByIds(ids)).map((asset) => blobKey(asset)));
      for (const blob of old) {
        if (named.has(blob.key)) continue;
        await blobs.delete(blob.key);
        removed++;
      }
    }
    if (removed > 0)
      logger.info(
        { blobs: removed },
        "removed blob objects no asset names (left by a stop in the middle of an upload or a delete)",
      );
    const dropped = await blobs.dropUnfinished(new Date(before));
    if (dropped > 0) logger.info({ uploads: dropped }, "dropped uploads a stop left unfinished");
    return removed;
  };
}
