import { createHash, randomBytes } from "node:crypto";
import { newId } from "@loom/contracts/ids";
import type { ApiKeyRecord } from "./store/port.ts";

/** API key secrets: `loom_` + 32 random bytes, base64url (docs/behaviour.md §3). */
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

/**
 * A new key's record and its secret (to show once): what CreateApiKey, the
 * bootstrap and the operator's `pnpm loom keys create` store alike. `value`:
 * a seeded secret (BOOTSTRAP_API_KEY); unset, a new one.
 */
export function newApiKey(
  fields: Pick<ApiKeyRecord, "organizationId" | "userId" | "name" | "createdBy">,
  at: Date,
  value: string = newApiKeySecret(),
): { record: ApiKeyRecord; value: string } {
  const record: ApiKeyRecord = {
    id: newId(),
    ...fields,
    secretHash: hashApiKeySecret(value),
    createdAt: at,
    updatedAt: at,
    lastUsed: at,
  };
  return { record, value };
}
