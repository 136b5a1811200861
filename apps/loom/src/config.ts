import { z } from "zod";
import { env } from "@loom/kit/config";
import { limitSettings } from "@loom/gateway/config";
import { identitySettings, requireBillingUrls, requireOidcClaims } from "@loom/identity/config";
import { runSettings } from "@loom/runs/config";
import { storageSettings } from "@loom/storage/config";

/** The all-in-one process: embedded defaults, every setting optional. */
export const loomConfigSchema = z.object({
  ...identitySettings,
  ...runSettings,
  ...limitSettings,
  ...storageSettings,
  PORT: env.port(8080),
  // Loopback by default: a laptop's first start prints an admin key.
  HOST: z.string().default("127.0.0.1"),
  /** Set it to keep data across restarts; unset keeps everything in memory. */
  MONGODB_URL: env.url().optional(),
  MONGODB_DB_PREFIX: z.string().default("loom_"),
  /** Unset: the in-process bus. */
  NATS_URL: env.url().optional(),
  LOG_LEVEL: env.logLevel(),
}).superRefine(requireOidcClaims).superRefine(requireBillingUrls);

export type LoomConfig = z.infer<typeof loomConfigSchema>;
