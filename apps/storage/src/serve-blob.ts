import { pipeline } from "node:stream";
import { Code, ConnectError } from "@connectrpc/connect";
import type { BlobRequest, BlobResponse, ServeBlob } from "@loom/blob-plane/exchange";
import { countingStreamedBytes } from "@loom/blob-plane/streamed-bytes";
import { notFound } from "@loom/contracts/errors";
import fresh from "fresh";
import { type AssetAccess, blobKey, newGeneration, type StorageLimits } from "./assets.ts";
import { type BlobInfo, type BlobStore, BlobTooLarge, type ByteRange } from "./blobs/port.ts";
import { parseRange } from "./byte-ranges.ts";
import { blobBytesReceived, blobBytesSent } from "./metrics.ts";
import type { BlobTokens } from "./signed-urls.ts";
import type { StorageStore } from "./store/port.ts";
import { overQuota, type UploadCommit } from "./upload-commit.ts";

export interface ServeBlobDeps {
  store: StorageStore;
  blobs: BlobStore;
  access: AssetAccess;
  tokens: BlobTokens;
  limits: StorageLimits;
  /** Switches an asset to an upload's bytes, within the quota. */
  commit: UploadCommit;
  /** Downloads are redirected to presigned store URLs (S3 with S3_PUBLIC_URLS). */
  directUrls: boolean;
}

/** How long the presigned URL a download is redirected to works: long enough to follow the redirect. */
const redirectSeconds = 60;

const tooLarge = (message: string) => new ConnectError(message, Code.OutOfRange);

/**
 * The data plane: GET, HEAD and PUT on a signed blob URL. The token is the
 * only credential; bytes stream between the caller and the blob store.
 */
export function createServeBlob(deps: ServeBlobDeps): ServeBlob {
  const { store, blobs, access, tokens, limits, commit } = deps;

  /** The most an upload to this asset may hold: the size limit, and what is left of the organization's quota. */
  async function uploadLimit(organizationId: string, replacing: number): Promise<{ bytes: number; quota: boolean }> {
    if (limits.quotaBytes === undefined) return { bytes: limits.maxAssetBytes, quota: false };
    const left = limits.quotaBytes - ((await store.storedBytes(organizationId)) - replacing);
    return left < limits.maxAssetBytes
      ? { bytes: Math.max(0, left), quota: true }
      : { bytes: limits.maxAssetBytes, quota: false };
  }

  const overLimit = (limit: { bytes: number; quota: boolean }) =>
    limit.quota
      ? overQuota(limits.quotaBytes!, limit.bytes)
      : tooLarge(`the upload exceeds the largest asset allowed (${limits.maxAssetBytes} bytes)`);

  /**
   * An upload: the bytes go to a new blob object (a new generation), the
   * record is switched to it in one step (upload-commit.ts, where the quota
   * is held), then the old object is removed. A stop anywhere leaves the
   * record and the bytes it names in agreement; an object nothing names is
   * removed by the orphan sweep (orphans.ts).
   */
  async function put(request: BlobRequest): Promise<BlobResponse> {
    const asset = await access.granted(await tokens.verify(request.token, "PUT"));
    const limit = await uploadLimit(asset.organizationId, asset.blob?.size ?? 0);
    const declared = Number(request.headers["content-length"] ?? Number.NaN);
    if (declared > limit.bytes) {
      request.body?.resume(); // the gateway closes the connection; nothing is stored
      throw overLimit(limit);
    }
    const contentType = String(request.headers["content-type"] ?? "") || "application/octet-stream";
    const generation = newGeneration();
    const key = blobKey({ ...asset, blob: { generation } });
    let stored: BlobInfo;
    try {
      stored = await blobs.write(key, request.body!, {
        contentType,
        maxBytes: limit.bytes,
        size: Number.isSafeInteger(declared) ? declared : undefined,
      });
    } catch (error) {
      if (error instanceof BlobTooLarge) throw overLimit(limit);
      if (request.signal.aborted) throw new ConnectError("the upload was cut off", Code.Canceled);
      throw error;
    }
    blobBytesReceived.inc(stored.size);
    let committed: Awaited<ReturnType<UploadCommit>>;
    try {
      committed = await commit(
        asset,
        { size: stored.size, contentType: stored.contentType, etag: stored.etag, generation },
        stored.updatedAt,
      );
    } catch (error) {
      await blobs.delete(key); // refused (over the quota) or failed: the new object is nobody's
      throw error;
    }
    // Deleted while the bytes arrived (the asset, or its bucket, whose sweep may have run already): leave nothing behind.
    if (!committed || !(await store.getBucket(asset.organizationId, asset.bucketId))) {
      await blobs.delete(key);
      throw notFound("asset");
    }
    const replaced = blobKey(committed.previous);
    if (replaced !== key) await blobs.delete(replaced);
    return { status: 200, headers: { etag: stored.etag } };
  }

  async function get(request: BlobRequest): Promise<BlobResponse> {
    const grant = await tokens.verify(request.token, "GET");
    // An upload may move the asset to new bytes (and remove the old) between
    // the look and the read: look again, record first, so the headers describe what is sent.
    let missing: string | undefined;
    for (let attempt = 0; attempt < 3; attempt++) {
      const asset = await access.granted(grant);
      const key = blobKey(asset);
      const info = await blobs.stat(key);
      if (!info && asset.blob && key !== missing) {
        missing = key; // moved by an upload since the record was read, or lost: read the record again
        continue;
      }
      if (!info)
        throw notFound(
          asset.blob ? "asset bytes (the stored bytes are missing)" : "asset bytes (nothing was uploaded yet)",
        );
      if (deps.directUrls) {
        // The bytes come straight from the store, which answers Range and
        // conditional requests itself; Loom checked the token and that there are bytes.
        const { url } = await blobs.presign!(key, "GET", redirectSeconds);
        return { status: 307, headers: { location: url, "cache-control": "no-store" } };
      }
      const headers: Record<string, string> = {
        etag: info.etag,
        "last-modified": info.updatedAt.toUTCString(),
        "accept-ranges": "bytes",
        "cache-control": "private, no-cache",
        "content-type": info.contentType,
      };
      // The origin evaluates If-None-Match / If-Modified-Since whatever the request's
      // Cache-Control says (RFC 9110 §13.2.2); `fresh` would read no-cache (which
      // fetch() adds to every conditional request) as "send it all".
      if (fresh({ ...request.headers, "cache-control": undefined }, headers)) return { status: 304, headers };
      const range = parseRange(request.headers.range, info.size, request.headers["if-range"], info);
      if (range === "unsatisfiable")
        return { status: 416, headers: { ...headers, "content-range": `bytes */${info.size}`, "content-length": "0" } };
      const length = range ? range.end - range.start + 1 : info.size;
      const partial: Record<string, string> = range
        ? { "content-range": `bytes ${range.start}-${range.end}/${info.size}` }
        : {};
      const status = range ? 206 : 200;
      if (request.method === "HEAD")
        return { status, headers: { ...headers, ...partial, "content-length": String(length) } };
      const body = await blobs.read(key, range as ByteRange | undefined, info.etag);
      if (!body) continue;
      blobBytesSent.inc(length);
      // Destroying what is returned (the caller went away) destroys the blob's stream too: pipeline joins them.
      const counted = pipeline(body, countingStreamedBytes(), () => {});
      return { status, headers: { ...headers, ...partial, "content-length": String(length) }, body: counted };
    }
    throw new ConnectError("the asset keeps changing: try again", Code.Unavailable);
  }

  return async (request) => (request.method === "PUT" ? put(request) : get(request));
}
