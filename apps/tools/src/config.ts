import { parseAllowedHosts } from "@loom/outbound/policy";
import { env } from "@loom/runtime/config";
import { standaloneSettings } from "@loom/services/settings";
import { z } from "zod";
import { previousKeysSetting, secretKeySetting } from "./secret-keys.ts";

/** The keys of secret values (docs/decisions.md, "Secrets"): shared by the tools service and the all-in-one process. */
export const secretsSettings = {
  /** The key that seals secret values: 32 random bytes in base64. */
  SECRETS_KEY: secretKeySetting(),
  /** Keys that only open values (a rotation's old keys), comma-separated; rows sealed with them are resealed at start. */
  SECRETS_PREVIOUS_KEYS: previousKeysSetting().optional(),
};

export type SecretsSettings = z.infer<z.ZodObject<typeof secretsSettings>>;

/** How Loom calls tool servers: shared by the tools service on its own and the all-in-one. */
export const toolCallSettings = {
  /**
   * Hosts whose private (and loopback) addresses tools may reach: host names, addresses and CIDRs, comma-separated
   * (docs/decisions.md, "Outbound requests on a user's behalf"). A bad entry stops the start.
   */
  TOOL_ALLOWED_HOSTS: z
    .string()
    .optional()
    .superRefine((text, ctx) => {
      try {
        parseAllowedHosts(text);
      } catch (error) {
        ctx.addIssue({ code: "custom", message: (error as Error).message });
      }
    }),
  /** The most a call of a tool's server takes, from its connection to its answer's last byte. */
  TOOL_CALL_TIMEOUT_MS: env.duration(60_000),
  /**
   * How often the tools service ends tool runs a stopped process left RUNNING (older than TOOL_CALL_TIMEOUT_MS and a
   * grace); also once at start.
   */
  TOOL_RUN_SWEEP_INTERVAL_MS: env.duration(5_000),
  /** The largest answer of a tool's server read, in bytes; a larger one fails the call. */
  TOOL_MAX_RESPONSE_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(2 * 1024 * 1024),
};

export type ToolCallSettings = z.output<z.ZodObject<typeof toolCallSettings>>;

/** The tools service run on its own (one Deployment in production): SECRETS_KEY is required there. */
export const toolsConfigSchema = z.object({
  ...standaloneSettings("tools"),
  ...secretsSettings,
  ...toolCallSettings,
});
