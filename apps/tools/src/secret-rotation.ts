import type { Logger } from "@loom/telemetry/logger";
import { openValue, SecretUnreadable, sealValue } from "./secret-cipher.ts";
import type { SecretKeyring } from "./secret-keys.ts";
import type { SecretStore } from "./store/secrets.ts";

/** Rows read at a time. */
const batch = 100;

/**
 * A rotation's second half, run at start (docs/decisions.md, "Secrets"):
 * every value sealed with a previous key (SECRETS_PREVIOUS_KEYS) is sealed
 * again with the current one, so after one start the previous keys can be
 * dropped. A value changed meanwhile is left as its update sealed it. Values
 * sealed with a key not held are counted and reported, never dropped.
 * Returns how many were resealed.
 */
export async function resealWithCurrentKey(deps: {
  store: SecretStore;
  keyring: SecretKeyring;
  logger: Logger;
}): Promise<number> {
  const { store, keyring, logger } = deps;
  const previous = [...keyring.byId.keys()].filter((id) => id !== keyring.current.id);
  let resealed = 0;
  let unreadable = 0;
  for (let after = ""; ; ) {
    const rows = await store.secretsSealedWith(previous, after, batch);
    for (const row of rows) {
      const owner = { organizationId: row.organizationId, secretId: row.id };
      try {
        const sealed = sealValue(keyring, owner, openValue(keyring, owner, row.sealed));
        if (await store.resealSecret(row.organizationId, row.id, row.sealed, sealed)) resealed++;
      } catch (error) {
        if (!(error instanceof SecretUnreadable)) throw error;
        unreadable++;
        logger.error({ secret_id: row.id, organization_id: row.organizationId }, error.message);
      }
    }
    if (rows.length < batch) break;
    after = rows.at(-1)!.id;
  }
  if (resealed > 0)
    logger.info(`resealed ${resealed} secrets with the current key ${keyring.current.id}: the previous keys can go`);
  const unheld = await store.countSecretsSealedWithout([...keyring.byId.keys()]);
  if (unheld > 0 || unreadable > 0)
    logger.error(
      `${unheld + unreadable} secrets cannot be decrypted with SECRETS_KEY or SECRETS_PREVIOUS_KEYS: tools naming them fail until their key is given back or their values are set again`,
    );
  return resealed;
}
