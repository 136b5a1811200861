import type { Client } from "@connectrpc/connect";
import { AssetUrlOperation, type StorageService } from "@loom/proto/storage/v1/storage_pb";
import { headersFor, type Principal } from "@loom/server/principal";
import { JobFailure, withStorageRetries } from "./retry.ts";
import type { SourceAsset } from "./sources.ts";

/** The bytes of an asset as they arrive, and how many have so far. */
export interface AssetBytes {
  pieces: AsyncIterable<Uint8Array>;
  read(): number;
}

/**
 * Streams an asset's bytes through a signed GET URL from storage's CreateAssetUrl (the data plane: bytes never travel
 * inside an RPC message), so a large file is read in pieces, never held whole here. Asking for the URL and opening
 * the download are retried like every call to storage; a download that breaks mid-way fails the job.
 */
export async function readAsset(
  storage: Client<typeof StorageService>,
  principal: Principal,
  asset: SourceAsset,
  signal: AbortSignal,
): Promise<AssetBytes> {
  const where = `reading ${asset.bucketId}/${asset.name}`;
  const response = await withStorageRetries(where, async () => {
    const { url, headers } = await storage.createAssetUrl(
      { bucketId: asset.bucketId, name: asset.name, operation: AssetUrlOperation.GET },
      { headers: headersFor(principal) },
    );
    const res = await fetch(url, { headers, signal });
    if (res.status >= 500) throw new Error(`the download answered ${res.status}`);
    return res;
  });
  if (!response.ok || !response.body)
    throw new JobFailure(`storage refused the download of ${asset.bucketId}/${asset.name}: ${response.status}`);
  let read = 0;
  const body = response.body;
  async function* pieces(): AsyncIterable<Uint8Array> {
    for await (const piece of body) {
      read += piece.length;
      yield piece;
    }
  }
  return { pieces: pieces(), read: () => read };
}
