import { createHash, randomBytes } from "node:crypto";

/** API key secrets: `loom_` + 32 random bytes, base64url (semantics.md §3). */
export const apiKeyPrefix = "loom_";

export function newApiKeySecret(): string {
  return apiKeyPrefix + randomBytes(32).toString("base64url");
}

/**
 * Only this hash is stored. Lookups go by the hash, so the time a lookup takes
 * depends on the hash, never on how much of a guessed secret was right.
 */
export function hashApiKeySecret(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

export function looksLikeApiKey(credential: string): boolean {
  return credential.startsWith(apiKeyPrefix) && credential.length >= apiKeyPrefix.length + 32;
}
