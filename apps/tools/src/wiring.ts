import type { RpcService } from "@loom/server/rpc-service";
import { openStore, type StoreSettings } from "@loom/store/open";
import type { Logger } from "@loom/telemetry/logger";
import type { SecretsSettings } from "./config.ts";
import { type SecretKeyring, secretKeyring } from "./secret-keys.ts";
import { resealWithCurrentKey } from "./secret-rotation.ts";
import type { SecretValues } from "./secret-values.ts";
import { createToolsService } from "./service.ts";
import { createMongoToolsStore } from "./store/mongo.ts";
import type { ToolsStore } from "./store/port.ts";
import { createSqliteToolsStore } from "./store/sqlite.ts";
import { createSecretValues } from "./stored-secret-values.ts";

/** MongoDB when a URL is given, else SQLite. */
export const openToolsStore = (settings: StoreSettings): Promise<ToolsStore> =>
  openStore(settings, {
    sqlite: createSqliteToolsStore,
    mongo: (m) => createMongoToolsStore(m.db, m.ping, m.close),
  });

/** The keys of secret values, from SECRETS_KEY and SECRETS_PREVIOUS_KEYS. */
export const keyringOf = (settings: SecretsSettings): SecretKeyring =>
  secretKeyring(settings.SECRETS_KEY, settings.SECRETS_PREVIOUS_KEYS);

/** The values of secrets, for the part of the tools service that calls tool servers (secret-values.ts). */
export const secretValuesOf = (store: ToolsStore, keyring: SecretKeyring): SecretValues =>
  createSecretValues({ store, keyring });

/**
 * Store → service: shared by main.ts, the all-in-one process and the tests.
 * Values sealed with a previous key are resealed with the current one before
 * the service answers (a rotation's second half).
 */
export async function wireTools(store: ToolsStore, settings: SecretsSettings, logger: Logger): Promise<RpcService> {
  await store.init();
  const keyring = keyringOf(settings);
  await resealWithCurrentKey({ store, keyring, logger });
  return createToolsService({ store, keyring });
}
