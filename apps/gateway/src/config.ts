import { env, serviceSettings } from "@loom/runtime/config";
import { gateway, serviceNames } from "@loom/services/registry";
import { serviceUrlSettings } from "@loom/services/settings";
import { z } from "zod";

/**
 * Per-credential and per-organization limits at the edge (docs/behaviour.md §9;
 * docs/decisions.md, "Limits per credential and per organization"); the
 * all-in-one process reuses them as they are. Each gateway replica counts on
 * its own (see README).
 */
export const limitSettings = {
  /** Requests one credential may make per window; unset: no rate limit (the default). */
  RATE_LIMIT_REQUESTS: z.coerce.number().int().min(1).optional(),
  /** Requests one organization's credentials may make together per window; unset: no such limit (the default). */
  RATE_LIMIT_ORGANIZATION_REQUESTS: z.coerce.number().int().min(1).optional(),
  /** The window of both request limits, in whole seconds (RateLimit-Policy's `w`). */
  RATE_LIMIT_WINDOW_SECONDS: z.coerce.number().int().min(1).default(1),
  /** SSE streams one credential may hold open at once on one replica. */
  STREAMS_PER_CREDENTIAL: z.coerce.number().int().min(1).default(100),
  /** SSE streams one organization's credentials may hold open together on one replica. */
  STREAMS_PER_ORGANIZATION: z.coerce.number().int().min(1).default(500),
};

export type LimitSettings = z.infer<z.ZodObject<typeof limitSettings>>;

/** The defaults: no rate limits, 100 streams per credential and 500 per organization. */
export const defaultLimits: LimitSettings = z.object(limitSettings).parse({});

export const gatewayConfigSchema = z.object({
  ...serviceSettings(gateway.port),
  ...limitSettings,
  // Every service's URL variable (IDENTITY_URL, ...: the service registry); the one that serves blobs
  // (STORAGE_URL) also gets the blob paths (`/blobs/...`) the gateway forwards.
  ...serviceUrlSettings(serviceNames),
  /**
   * Identity's setting, read here too (one ConfigMap serves both): on, runs
   * and chat calls ask identity for the organization's billing standing; off,
   * they do not (docs/decisions.md, "Billing standing: asked only when required").
   */
  BILLING_REQUIRED: env.flag().default(false),
  /**
   * Origins the console's page may send requests to besides Loom's own, comma-separated: the S3 endpoint's
   * origin when the storage service hands out S3's own signed URLs (S3_BUCKET with S3_PUBLIC_URLS), so that the
   * console's uploads and downloads are not refused by its Content-Security-Policy.
   */
  CONSOLE_CONNECT_ORIGINS: z
    .string()
    .default("")
    .transform((list) =>
      list
        .split(",")
        .map((origin) => origin.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.url().transform((url) => new URL(url).origin))),
  /** Key revocations arrive here; with it the gateway caches who a credential is (see README). */
  NATS_URL: env.url().optional(),
});
