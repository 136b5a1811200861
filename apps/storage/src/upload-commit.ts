import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError } from "@connectrpc/connect";
import { newId } from "@loom/contracts/ids";
import type { StorageLimits } from "./assets.ts";
import type { AssetRecord, BlobRecord, StorageStore } from "./store/port.ts";
import { updateTime } from "./update-time.ts";

/**
 * How long a quota reservation counts: a commit takes milliseconds; one left
 * by a process that stopped while committing stops counting after this.
 */
export const reservationLifetimeMs = 60_000;

/**
 * How often a commit tries again: when another upload to the same asset
 * committed first, or when uploads committing at the same time together
 * would pass the quota though this one alone would not (each waits a random
 * moment, so they go one after the other).
 */
const attempts = 10;
const backoff = () => sleep(5 + Math.random() * 45);

export const overQuota = (quotaBytes: number, left: number) =>
  new ConnectError(
    `the upload would exceed the organization's storage quota (${quotaBytes} bytes; ${Math.max(0, left)} left for this asset)`,
    Code.OutOfRange,
  );

/**
 * Switches an asset to an upload's new blob object, in one atomic step of
 * the store, and answers the record as it was (whose object the caller then
 * deletes), or undefined when the asset is gone.
 *
 * With a quota, the check is part of the commit: the upload reserves its
 * size, then counts every reservation and what is stored, less exactly what
 * it replaces (the commit is conditional on the asset's bytes being still
 * the ones it counted out). Of two concurrent commits, at least one sees the
 * other (its reservation or its committed record), so together they never
 * pass the quota. One that would fit alone but not beside the others'
 * reservations waits and tries again: they may be refused, or it may be.
 */
export function createUploadCommit(deps: { store: StorageStore; limits: StorageLimits; now: () => Date }) {
  const { store, limits, now } = deps;

  async function commitOnce(current: AssetRecord, blob: BlobRecord, storedAt: Date) {
    const replacing = current.blob?.generation ?? null;
    const at = updateTime(current.updatedAt, storedAt);
    return store.replaceAssetBlob(
      current.organizationId,
      current.bucketId,
      current.id,
      replacing,
      blob,
      at,
      current.presignedPutUntil,
    );
  }

  async function withinQuota(quotaBytes: number, current: AssetRecord, blob: BlobRecord, storedAt: Date) {
    const reservation = { id: newId(), organizationId: current.organizationId, bytes: blob.size, at: now() };
    await store.reserveBytes(reservation);
    try {
      // Reservations first, then what is stored: a commit landing between the two reads is counted in one of them.
      const reserved = await store.reservedBytes(
        current.organizationId,
        new Date(reservation.at.getTime() - reservationLifetimeMs),
      );
      const stored = await store.storedBytes(current.organizationId);
      const alone = stored - (current.blob?.size ?? 0) + blob.size;
      if (alone > quotaBytes) throw overQuota(quotaBytes, quotaBytes - (alone - blob.size));
      if (reserved - blob.size + alone > quotaBytes) return "contended";
      return await commitOnce(current, blob, storedAt);
    } finally {
      await store.releaseBytes(reservation.id);
    }
  }

  return async function commit(
    asset: AssetRecord,
    blob: BlobRecord,
    storedAt: Date,
  ): Promise<{ previous: AssetRecord } | undefined> {
    for (let attempt = 0; attempt < attempts; attempt++) {
      const current = await store.getAssetById(asset.organizationId, asset.bucketId, asset.id);
      if (!current) return undefined;
      const done =
        limits.quotaBytes === undefined
          ? await commitOnce(current, blob, storedAt)
          : await withinQuota(limits.quotaBytes, current, blob, storedAt);
      if (done === "contended") await backoff();
      else if (done !== "moved") return done;
    }
    throw new ConnectError(
      "other uploads to this asset or organization keep committing at the same time: try again",
      Code.Unavailable,
    );
  };
}

export type UploadCommit = ReturnType<typeof createUploadCommit>;
