import { hash } from "node:crypto";
import type { Principal } from "@loom/server/principal";

/** Who a credential is: the principal, and the API key it is ("" for an access token). */
export interface Authenticated {
  principal: Principal;
  apiKeyId: string;
}

interface Entry extends Authenticated {
  until: number;
}

/** What the gateway keys per-credential state by: its SHA-256, so no secret is held as a map key. */
export const credentialKey = (credential: string) => hash("sha256", credential, "hex");

/**
 * Remembers Authenticate answers for as long as identity allows
 * (`cacheable_until`), so a request costs one RPC, not two. Keyed by
 * `credentialKey` (hashed once per request, by the caller), so no secret is
 * held as a map key. Revocations arrive through `revokeApiKey` (see
 * revocations.ts: from the bus, and from the gateway that served the DELETE).
 * `trusted` says whether revocations can reach it now (the bus is connected):
 * while not, nothing is served from it or added to it.
 */
export function createPrincipalCache(
  options: { maxEntries?: number; now?: () => number; trusted?: () => boolean } = {},
) {
  const maxEntries = options.maxEntries ?? 10_000;
  const now = options.now ?? Date.now;
  const trusted = options.trusted ?? (() => true);
  const entries = new Map<string, Entry>();

  return {
    get(key: string): Authenticated | undefined {
      // Not while revocations may be missed (the bus is down): every request then asks identity.
      if (!trusted()) return undefined;
      const entry = entries.get(key);
      if (!entry) return undefined;
      if (entry.until <= now()) {
        entries.delete(key);
        return undefined;
      }
      return entry;
    },
    put(key: string, principal: Principal, apiKeyId: string, until: Date): void {
      if (!trusted() || until.getTime() <= now()) return;
      // Oldest first out: Map iterates in insertion order.
      if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!);
      entries.set(key, { principal, apiKeyId, until: until.getTime() });
    },
    revokeApiKey(apiKeyId: string): void {
      for (const [key, entry] of entries) if (entry.apiKeyId === apiKeyId) entries.delete(key);
    },
    /** Forgets every answer: after the bus was lost, revocations sent meanwhile were missed. */
    clear: () => entries.clear(),
    size: () => entries.size,
  };
}

export type PrincipalCache = ReturnType<typeof createPrincipalCache>;
