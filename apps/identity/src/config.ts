import { z } from "zod";
import { env, mongoSettings, serviceSettings } from "@loom/kit/config";
import { apiKeyPrefix } from "./api-key-secret.ts";

/** Identity's own settings; the all-in-one process reuses them as they are. */
export const identitySettings = {
  BOOTSTRAP_EMAIL: z.email().default("admin@localhost"),
  BOOTSTRAP_API_KEY: z
    .string()
    .refine((v) => v.startsWith(apiKeyPrefix) && v.length >= apiKeyPrefix.length + 32, {
      message: `must start with "${apiKeyPrefix}" followed by at least 32 characters`,
    })
    .optional(),
  ACCESS_TOKEN_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  OIDC_JWKS_URL: env.url().optional(),
  OIDC_ISSUER: z.string().optional(),
  OIDC_AUDIENCE: z.string().optional(),
};

/** The identity service run on its own (one Deployment in production). */
export const identityConfigSchema = z.object({
  ...serviceSettings(8081),
  ...mongoSettings("loom_identity"),
  ...identitySettings,
  /** Where key revocations are announced to the gateways; without it, gateways do not cache. */
  NATS_URL: env.url().optional(),
});
