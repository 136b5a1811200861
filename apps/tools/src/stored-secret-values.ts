import { openValue } from "./secret-cipher.ts";
import type { SecretKeyring } from "./secret-keys.ts";
import type { SecretValues } from "./secret-values.ts";
import type { SecretStore } from "./store/secrets.ts";

/**
 * SecretValues on the tools store: opens each found secret's sealed value with
 * the keyring, then marks them used. A value that does not open (a key not
 * held, a row altered or moved) fails the whole reveal with
 * SecretUnreadable, which names the secret and the key id, never a value.
 */
export function createSecretValues(deps: { store: SecretStore; keyring: SecretKeyring }): SecretValues {
  const { store, keyring } = deps;
  return {
    async reveal(organizationId, secretIds, at) {
      const found = await store.getSecrets(organizationId, secretIds);
      const values = new Map(
        found.map((s) => [s.id, openValue(keyring, { organizationId, secretId: s.id }, s.sealed)] as const),
      );
      await store.markSecretsUsed(
        organizationId,
        found.map((s) => s.id),
        at,
      );
      return values;
    },
  };
}
