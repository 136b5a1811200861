import { env } from "@loom/runtime/config";
import { standaloneSettings } from "@loom/services/settings";
import { z } from "zod";
import { defaultMaxTokenLifetimeSeconds } from "./access-tokens.ts";
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
  /** API keys one user may own (docs/decisions.md, "Limits per credential and per organization"). */
  API_KEYS_PER_USER: z.coerce.number().int().min(1).default(100),
  /** API keys one organization may have, user and organization keys together. */
  API_KEYS_PER_ORGANIZATION: z.coerce.number().int().min(1).default(1_000),
  OIDC_JWKS_URL: env.url().optional(),
  OIDC_ISSUER: z.string().optional(),
  OIDC_AUDIENCE: z.string().optional(),
  /** How far ahead an access token's `exp` may be; a token must have one (docs/decisions.md, "Access token lifetime"). */
  ACCESS_TOKEN_MAX_LIFETIME_SECONDS: z.coerce.number().int().min(60).default(defaultMaxTokenLifetimeSeconds),
  /** Billing (docs/behaviour.md §8): without a key, the billing operations answer 503. */
  STRIPE_SECRET_KEY: z.string().min(1).optional(),
  /** Verifies webhook deliveries; without it, the webhook answers 503. */
  STRIPE_WEBHOOK_SECRET: z.string().min(1).optional(),
  /** Where the Stripe SDK sends requests instead of https://api.stripe.com (stripe-mock, a fake). */
  STRIPE_API_BASE: env.url().optional(),
  /** Where the customer portal sends the user back; required with STRIPE_SECRET_KEY. */
  BILLING_RETURN_URL: env.url().optional(),
  /** Where Checkout sends the user after paying; default BILLING_RETURN_URL. */
  BILLING_SUCCESS_URL: env.url().optional(),
  /** Where Checkout sends the user who gives up; default BILLING_RETURN_URL. */
  BILLING_CANCEL_URL: env.url().optional(),
  /** On: an organization without an active subscription gets 402 on paid operations (runs). */
  BILLING_REQUIRED: env.flag().default(false),
};

/**
 * Stripe needs somewhere to send the user back to: with a key, the return
 * URL is required (success and cancel default to it). Applied to every
 * schema that takes identitySettings.
 */
export function requireBillingUrls(
  config: { STRIPE_SECRET_KEY?: string; BILLING_RETURN_URL?: string; BILLING_REQUIRED?: boolean },
  ctx: z.RefinementCtx,
): void {
  if (config.BILLING_REQUIRED && !config.STRIPE_SECRET_KEY) {
    ctx.addIssue({ code: "custom", path: ["BILLING_REQUIRED"], message: "needs STRIPE_SECRET_KEY: nobody could pay" });
  }
  if (config.STRIPE_SECRET_KEY && !config.BILLING_RETURN_URL) {
    ctx.addIssue({
      code: "custom",
      path: ["BILLING_RETURN_URL"],
      message: "is required when STRIPE_SECRET_KEY is set",
    });
  }
}

/**
 * With a JWKS URL, the issuer and audience are required: without them any
 * token the provider signs — for any of its other applications — would be
 * accepted. Applied to every schema that takes identitySettings.
 */
export function requireOidcClaims(
  config: { OIDC_JWKS_URL?: string; OIDC_ISSUER?: string; OIDC_AUDIENCE?: string },
  ctx: z.RefinementCtx,
): void {
  if (!config.OIDC_JWKS_URL) return;
  for (const name of ["OIDC_ISSUER", "OIDC_AUDIENCE"] as const) {
    if (!config[name]) ctx.addIssue({ code: "custom", path: [name], message: "is required when OIDC_JWKS_URL is set" });
  }
}

/** The identity service run on its own (one Deployment in production). */
export const identityConfigSchema = z
  .object({
    ...standaloneSettings("identity"),
    ...identitySettings,
    /** Where key revocations are announced to the gateways; without it, gateways do not cache. */
    NATS_URL: env.url().optional(),
  })
  .superRefine(requireOidcClaims)
  .superRefine(requireBillingUrls);
