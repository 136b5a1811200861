import { pipeline, type Readable } from "node:stream";
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  NoSuchKey,
  NotFound,
  PutObjectCommand,
  paginateListObjectsV2,
  S3Client,
  S3ServiceException,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { DependencyDown } from "@loom/runtime/dependency-down";
import { StartupRefused } from "@loom/runtime/shutdown";
import type { StorageSettings } from "../config.ts";
import { byteLimit } from "./byte-limit.ts";
import { type BlobInfo, type BlobStore, BlobTooLarge, blobKeyPattern } from "./port.ts";

/** What the S3 adapter reads of the storage settings (tests pass their own). */
export type S3BlobSettings = Pick<
  StorageSettings,
  "S3_ENDPOINT" | "S3_REGION" | "S3_ACCESS_KEY_ID" | "S3_SECRET_ACCESS_KEY" | "S3_FORCE_PATH_STYLE"
> & {
  S3_BUCKET: string;
};

/** Node's codes for "no connection to that server" (ECONNRESET, EPIPE, ETIMEDOUT reach us renamed TimeoutError). */
const unreachableCodes = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/**
 * S3 unreachable, timing out or failing on its side (5xx, SlowDown
 * included): worth retrying later, so the service answers 503, not 500.
 * The SDK has no class for a timeout (a plain Error named TimeoutError),
 * hence the decision here, where the SDK is known, and `DependencyDown`.
 */
function isS3Down(error: unknown): boolean {
  if (error instanceof S3ServiceException) return (error.$metadata.httpStatusCode ?? 0) >= 500;
  if (!(error instanceof Error)) return false;
  return error.name === "TimeoutError" || unreachableCodes.has(String((error as NodeJS.ErrnoException).code ?? ""));
}

function s3Failure(error: unknown): unknown {
  return isS3Down(error) ? new DependencyDown("S3", { cause: error }) : error;
}

/**
 * Why the bucket could not be used at start, as one sentence naming the
 * variable to fix (a refused start prints no stack: runtime/shutdown.ts).
 */
function startRefusal(error: unknown, settings: S3BlobSettings): Error {
  const bucket = JSON.stringify(settings.S3_BUCKET);
  const at = settings.S3_ENDPOINT ? ` at ${settings.S3_ENDPOINT}` : "";
  const status = error instanceof S3ServiceException ? error.$metadata.httpStatusCode : undefined;
  // The SDK's credential chain found nothing (its class lives in a transitive package: matched by name).
  if (error instanceof Error && error.name === "CredentialsProviderError") {
    const unset = (["S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY"] as const).filter((name) => !settings[name]);
    return new StartupRefused(
      `${unset.join(" and ")}: not set, and the AWS SDK found no other credentials (environment, profile, role): set S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY for S3_BUCKET ${bucket}`,
      { cause: error },
    );
  }
  if (error instanceof NotFound || status === 404)
    return new StartupRefused(`S3_BUCKET: bucket ${bucket} does not exist${at}: create it first`, { cause: error });
  if (status === 401 || status === 403) {
    return new StartupRefused(
      `S3_ACCESS_KEY_ID: S3${at} refused these credentials for bucket ${bucket} (${status}): check S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY`,
      { cause: error },
    );
  }
  if (isS3Down(error)) {
    const reason = error instanceof Error ? error.message || error.name : String(error);
    // Still a dependency that is down, to whoever looks past the sentence (isDependencyDown follows causes).
    return new StartupRefused(
      `${settings.S3_ENDPOINT ? "S3_ENDPOINT" : "S3_REGION"}: S3${at} is unavailable for bucket ${bucket} (${reason})`,
      { cause: s3Failure(error) },
    );
  }
  return s3Failure(error) as Error;
}

/** S3's limit on one PUT (5 GiB): a longer body must go in parts. */
const maxSinglePutBytes = 5 * 1024 ** 3;

/** Connections to S3 one process may open (downloads in flight, uploads' parts, other calls). */
const maxConnections = 1024;

/**
 * Asset bytes in one bucket of any S3-compatible store (AWS, MinIO, R2, ...).
 * Uploads stream through `Upload` (lib-storage): parts of 5 MiB, at most 4 in
 * flight, so an upload of any length holds about 20 MiB; a body under one
 * part is a single PutObject sent once it has ended. Either way S3 replaces
 * the object only when the upload completes: a refused or failed upload
 * (the multipart upload is aborted) leaves the old bytes.
 */
export function createS3BlobStore(settings: S3BlobSettings, options: { requestTimeoutMs?: number } = {}): BlobStore {
  const bucket = settings.S3_BUCKET;
  const client = new S3Client({
    region: settings.S3_REGION,
    endpoint: settings.S3_ENDPOINT,
    forcePathStyle: settings.S3_FORCE_PATH_STYLE,
    // Unset: the SDK's own chain (environment, IAM role of the pod, ...).
    credentials:
      settings.S3_ACCESS_KEY_ID && settings.S3_SECRET_ACCESS_KEY
        ? { accessKeyId: settings.S3_ACCESS_KEY_ID, secretAccessKey: settings.S3_SECRET_ACCESS_KEY }
        : undefined,
    // Checksums only where S3 demands them (DeleteObjects): the SDK's default
    // adds CRC32 checksums to every upload, which not every S3-compatible store
    // knows, and writes the checksum of an empty body into presigned PUT URLs.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    // A store that does not accept the connection, or accepts it and never
    // answers, fails the call (503) instead of holding it for minutes or for
    // ever. The request timeout runs until S3's answer begins (an uploaded part
    // included), never over a download's body: a slow reader is not an outage.
    requestHandler: {
      connectionTimeout: 5_000,
      requestTimeout: options.requestTimeoutMs ?? 60_000,
      throwOnRequestTimeout: true,
      // A download holds its connection as long as its reader takes: with the
      // SDK's 50 sockets, 50 slow readers would make every other call wait.
      httpAgent: { keepAlive: true, maxSockets: maxConnections },
      httpsAgent: { keepAlive: true, maxSockets: maxConnections },
    },
  });

  async function send<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw s3Failure(error);
    }
  }

  async function stat(key: string): Promise<BlobInfo | undefined> {
    try {
      const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
      return {
        size: head.ContentLength ?? 0,
        contentType: head.ContentType ?? "application/octet-stream",
        etag: head.ETag ?? "",
        updatedAt: head.LastModified ?? new Date(0),
      };
    } catch (error) {
      if (error instanceof NotFound || error instanceof NoSuchKey) return undefined;
      throw s3Failure(error);
    }
  }

  return {
    kind: "s3",

    /**
     * Checks that the bucket exists and is reachable with these credentials;
     * it never creates it. Whoever runs Loom owns the bucket (region,
     * encryption, lifecycle, public access): Loom's credentials need no
     * s3:CreateBucket, and a mistyped S3_BUCKET fails the start instead of
     * quietly filling a new, empty bucket. The tests create a fresh bucket each.
     */
    async init() {
      try {
        await client.send(new HeadBucketCommand({ Bucket: bucket }));
      } catch (error) {
        throw startRefusal(error, settings);
      }
    },
    async ready() {
      return client.send(new HeadBucketCommand({ Bucket: bucket })).then(
        () => true,
        () => false,
      );
    },
    async close() {
      client.destroy();
    },

    async write(key, body, { contentType, maxBytes, size }) {
      const counted = byteLimit(maxBytes, size);
      // The body's own failure (the caller went away) or the limit: not S3's.
      let bodyFailure: unknown;
      // The SDK pipes the body without watching it fail: a failure aborts the request.
      const abort = new AbortController();
      pipeline(body, counted, (error) => {
        if (!error) return;
        bodyFailure ??= error;
        abort.abort(error);
      });
      // A body of known length S3 takes in one PUT streams straight through,
      // nothing held (and at S3's full speed: parts cost it half). Of unknown
      // length, it goes in parts, each held in memory until sent.
      if (size !== undefined && size <= maxSinglePutBytes) {
        try {
          await client.send(
            new PutObjectCommand({
              Bucket: bucket,
              Key: key,
              Body: counted,
              ContentLength: size,
              ContentType: contentType,
            }),
            { abortSignal: abort.signal },
          );
        } catch (error) {
          counted.destroy();
          throw bodyFailure ?? (error instanceof BlobTooLarge ? error : s3Failure(error));
        }
        const stored = await stat(key);
        if (!stored) throw new Error(`S3 lost ${key} right after storing it`);
        return stored;
      }
      const upload = new Upload({
        client,
        params: { Bucket: bucket, Key: key, Body: counted, ContentType: contentType },
      });
      try {
        await upload.done();
      } catch (error) {
        // Upload aborts the multipart upload itself when a part or the body
        // fails; abort() also stops parts still queued, and destroying the
        // counter stops reading a body nobody will store.
        const failure = bodyFailure ?? (error instanceof BlobTooLarge ? error : s3Failure(error));
        await upload.abort().catch(() => {});
        counted.destroy();
        throw failure;
      }
      const stored = await stat(key);
      if (!stored) throw new Error(`S3 lost ${key} right after storing it`);
      return stored;
    },

    async read(key, range, etag) {
      try {
        const object = await client.send(
          new GetObjectCommand({
            Bucket: bucket,
            Key: key,
            Range: range ? `bytes=${range.start}-${range.end}` : undefined,
            IfMatch: etag,
          }),
        );
        // In Node the SDK's body is the HTTP response itself: a Readable.
        return object.Body as Readable;
      } catch (error) {
        // Gone, or (If-Match) replaced since the caller's stat.
        if (
          error instanceof NoSuchKey ||
          (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 412
        )
          return undefined;
        throw s3Failure(error);
      }
    },
    stat,
    async delete(key) {
      await send(() => client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key })));
    },
    async deletePrefix(prefix) {
      await send(async () => {
        // A page holds at most 1,000 keys, as many as one DeleteObjects takes.
        for await (const page of paginateListObjectsV2({ client }, { Bucket: bucket, Prefix: prefix })) {
          const objects = (page.Contents ?? []).flatMap((object) => (object.Key ? [{ Key: object.Key }] : []));
          if (!objects.length) continue;
          const result = await client.send(
            new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: objects, Quiet: true } }),
          );
          const failed = result.Errors ?? [];
          if (failed.length)
            throw new Error(
              `S3 kept ${failed.length} object(s) under ${prefix}: ${failed[0]?.Code} ${failed[0]?.Message}`,
            );
        }
      });
    },

    async dropUnfinished(before) {
      let dropped = 0;
      let markers: { KeyMarker?: string; UploadIdMarker?: string } = {};
      for (;;) {
        const page = await send(() => client.send(new ListMultipartUploadsCommand({ Bucket: bucket, ...markers })));
        for (const upload of page.Uploads ?? []) {
          if (
            !upload.Key ||
            !upload.UploadId ||
            !blobKeyPattern.test(upload.Key) ||
            !upload.Initiated ||
            upload.Initiated >= before
          )
            continue;
          await send(() =>
            client.send(
              new AbortMultipartUploadCommand({ Bucket: bucket, Key: upload.Key, UploadId: upload.UploadId }),
            ),
          );
          dropped++;
        }
        if (!page.IsTruncated) return dropped;
        markers = { KeyMarker: page.NextKeyMarker, UploadIdMarker: page.NextUploadIdMarker };
      }
    },
    async *list() {
      const pages = paginateListObjectsV2({ client }, { Bucket: bucket });
      for (;;) {
        const page = await send(() => pages.next());
        if (page.done) return;
        yield (page.value.Contents ?? []).flatMap((object) =>
          object.Key && object.LastModified && blobKeyPattern.test(object.Key)
            ? [{ key: object.Key, updatedAt: object.LastModified }]
            : [],
        );
      }
    },

    /**
     * Signs only `host`: at URL time the length and type of the upload are
     * unknown, so S3 cannot enforce the size limit of a presigned PUT (nor
     * its type). The storage service checks the size when it reconciles the
     * asset with the stored object (its next read).
     */
    async presign(key, operation, expiresInSeconds) {
      const command =
        operation === "PUT"
          ? new PutObjectCommand({ Bucket: bucket, Key: key })
          : new GetObjectCommand({ Bucket: bucket, Key: key });
      const url = await send(() => getSignedUrl(client, command, { expiresIn: expiresInSeconds }));
      return { url, headers: {} };
    },
  };
}
