import type { Logger } from "@loom/telemetry/logger";
import { bucketBlobPrefix } from "./assets.ts";
import type { BlobStore } from "./blobs/port.ts";
import type { BucketRecord, StorageStore } from "./store/port.ts";

/** How often the sweep looks for deleted buckets left unfinished (a process stopped in the middle). */
export const sweepEveryMs = 60_000;

/**
 * Deleting a bucket: it is marked (gone for the API at once), then its bytes,
 * its assets and finally the bucket record go, in that order, so a stop
 * anywhere leaves a marked bucket whose remains the sweep finds and finishes.
 */
export function createBucketSweep(deps: { store: StorageStore; blobs: BlobStore; logger: Logger; now: () => Date }) {
  const { store, blobs, logger } = deps;

  async function sweepBucket(bucket: BucketRecord): Promise<void> {
    await blobs.deletePrefix(bucketBlobPrefix(bucket));
    await store.deleteAssetsOfBucket(bucket.id);
    await store.forgetBucket(bucket.id);
  }

  /** Finishes buckets marked before `olderThanMs` ago (not ones a request is deleting right now). */
  async function sweepLeftovers(olderThanMs = sweepEveryMs): Promise<number> {
    const left = await store.bucketsToSweep(new Date(deps.now().getTime() - olderThanMs), 100);
    for (const bucket of left) await sweepBucket(bucket);
    if (left.length > 0) logger.info({ buckets: left.length }, "finished deleting buckets left unfinished");
    return left.length;
  }

  /** Runs the sweep now and every minute until stopped. */
  const start = () => startPeriodically(() => sweepLeftovers(0), sweepEveryMs, logger, "bucket sweep");

  return { sweepBucket, sweepLeftovers, start };
}

/** Runs `work` now and every `everyMs` until stopped; a failure is logged and the next run tries again. */
export function startPeriodically(
  work: () => Promise<unknown>,
  everyMs: number,
  logger: Logger,
  what: string,
): { stop(): void } {
  const run = () =>
    void work().catch((error: unknown) => logger.warn({ err: error }, `${what} failed; trying again later`));
  run();
  const timer = setInterval(run, everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
