import { env } from "@loom/runtime/config";
import { standaloneSettings } from "@loom/services/settings";
import { z } from "zod";

/** The longest a signed URL may work (S3's own presigning limit): 7 days. */
export const maxAssetUrlTtlSeconds = 7 * 24 * 3600;

/** Storage settings, shared by the storage service and the all-in-one process. */
export const storageSettings = {
  /** Where the local-disk blob store keeps bytes (used when S3_BUCKET is unset). */
  BLOB_DIR: z.string().default("./.loom/blobs"),
  /** Set: asset bytes live in this S3 bucket (any S3-compatible store), not on local disk. */
  S3_BUCKET: z.string().min(3).optional(),
  /** An S3-compatible endpoint (MinIO, R2, ...); unset: AWS. */
  S3_ENDPOINT: env.url().optional(),
  S3_REGION: z.string().default("us-east-1"),
  S3_ACCESS_KEY_ID: z.string().optional(),
  S3_SECRET_ACCESS_KEY: z.string().optional(),
  /** Path-style addressing (`<endpoint>/<bucket>/<key>`), as MinIO needs. */
  S3_FORCE_PATH_STYLE: env.flag().default(false),
  /**
   * Clients can reach the S3 endpoint: a single-operation asset URL is a
   * presigned S3 URL, and a download on a Loom URL is redirected (307) to
   * one, so the bytes skip Loom. `false` (an endpoint only Loom reaches):
   * every byte goes through Loom.
   */
  S3_PUBLIC_URLS: env.flag().default(true),
  /** The address clients reach Loom at, for signed URLs; unset: the listen address. */
  PUBLIC_URL: env.url().optional(),
  /** HMAC key of signed URLs (at least 32 characters); unset: a random one per start (URLs die with the process). */
  BLOB_SIGNING_KEY: z.string().min(32, "must be at least 32 characters").optional(),
  /** How long a signed URL works, in seconds: default 15 minutes, at most 7 days. */
  ASSET_URL_TTL_SECONDS: z.coerce.number().int().min(1).max(maxAssetUrlTtlSeconds).default(900),
  /** Largest asset an upload may store, in bytes (default 5 GiB); larger is 413. */
  ASSET_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1)
    .default(5 * 1024 ** 3),
  /** Bytes one organization may store over all its assets; unset: no quota. */
  STORAGE_QUOTA_BYTES: z.coerce.number().int().min(0).optional(),
  /**
   * How old a blob object no asset names must be before the orphan sweep
   * removes it, in seconds (default 1 day): longer than any upload takes,
   * since a younger one may be an upload about to commit.
   */
  ORPHAN_BLOB_GRACE_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .default(24 * 3600),
};

export type StorageSettings = z.infer<z.ZodObject<typeof storageSettings>>;

/** The storage service run on its own (one Deployment in production). */
export const storageConfigSchema = z.object({
  ...standaloneSettings("storage"),
  ...storageSettings,
  /** Required here: the gateway's public address, which signed URLs point at. */
  PUBLIC_URL: env.url(),
});
