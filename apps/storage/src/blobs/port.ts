import type { Readable } from "node:stream";

/** What a blob store knows of stored bytes. */
export interface BlobInfo {
  size: number;
  contentType: string;
  /** Strong validator, quoted as in an HTTP ETag header. */
  etag: string;
  updatedAt: Date;
}

/**
 * The keys Loom writes (assets.ts `blobKey`): `<organization>/<bucket>/<asset>`,
 * ids, then `.<generation>` (16 hex digits) unless it is the asset's first
 * key. Nothing else reaches a file system, nor is swept from a bucket.
 */
export const blobKeyPattern = /^([0-9a-f-]{36})\/([0-9a-f-]{36})\/([0-9a-f-]{36})(?:\.([0-9a-f]{16}))?$/;

/** A blob as the orphan sweep sees it. */
export interface StoredBlob {
  key: string;
  updatedAt: Date;
}

/** Inclusive byte range, already checked against the blob's size. */
export interface ByteRange {
  start: number;
  end: number;
}

export interface PresignedUrl {
  url: string;
  /** Headers the caller must send with it. */
  headers: Record<string, string>;
}

/**
 * Where asset bytes live: local disk (the embedded default) or any
 * S3-compatible store. Keys are `<organization>/<bucket>/<asset id>`. Bytes
 * always stream: nothing here holds a whole blob in memory.
 */
export interface BlobStore {
  readonly kind: "disk" | "s3";
  init(): Promise<void>;
  ready(): Promise<boolean>;
  close(): Promise<void>;
  /**
   * Streams `body` into the blob at `key`, replacing what was there only once
   * every byte is stored (a failed or refused upload leaves the old bytes).
   * Rejects with `BlobTooLarge` as soon as more than `maxBytes` arrive.
   * `size`: the body's length when the caller declared it (Content-Length),
   * which lets a store take it in one request; a body that ends short fails.
   */
  write(
    key: string,
    body: Readable,
    options: { contentType: string; maxBytes: number; size?: number | undefined },
  ): Promise<BlobInfo>;
  /**
   * The bytes (or the range of them); undefined when there is no blob at
   * `key`, or when `etag` is given and the blob is no longer that one (an
   * upload replaced it since `stat`: the caller looks again, so the headers
   * it sends always describe the bytes it sends).
   */
  read(key: string, range?: ByteRange, etag?: string): Promise<Readable | undefined>;
  stat(key: string): Promise<BlobInfo | undefined>;
  /** Removes the blob; no error when there is none. */
  delete(key: string): Promise<void>;
  /** Removes every blob whose key starts with `prefix` (a bucket's: `<organization>/<bucket>/`). */
  deletePrefix(prefix: string): Promise<void>;
  /**
   * Every blob in the store, in pages (the orphan sweep's walk): its key and
   * when it was last written. Keys of other shapes (not Loom's) are left out.
   */
  list(): AsyncIterable<StoredBlob[]>;
  /**
   * Drops uploads begun before `before` and never finished (a process that
   * stopped mid-upload): S3's incomplete multipart uploads, whose parts are
   * stored and billed until aborted; files left in `.incoming/` on disk.
   * Answers how many.
   */
  dropUnfinished(before: Date): Promise<number>;
  /** S3 only: a presigned store URL for one operation. */
  presign?(key: string, operation: "PUT" | "GET", expiresInSeconds: number): Promise<PresignedUrl>;
}

/** An upload over its limit: the service answers 413 and the old bytes stay. */
export class BlobTooLarge extends Error {
  override name = "BlobTooLarge";
  readonly maxBytes: number;
  constructor(maxBytes: number) {
    super(`the upload exceeds ${maxBytes} bytes`);
    this.maxBytes = maxBytes;
  }
}
