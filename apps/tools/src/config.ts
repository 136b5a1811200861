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

/** The tools service run on its own (one Deployment in production): SECRETS_KEY is required there. */
export const toolsConfigSchema = z.object({
  ...standaloneSettings("tools"),
  ...secretsSettings,
});
