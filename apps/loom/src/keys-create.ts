import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { identitySettings } from "@loom/identity/config";
import { createOperatorKey } from "@loom/identity/operator-key";
import { openIdentityStore } from "@loom/identity/wiring";
import { loadConfig } from "@loom/runtime/config";
import { StartupRefused } from "@loom/runtime/shutdown";
import { sharedSqlite } from "@loom/store/sqlite";
import type { Logger } from "@loom/telemetry/logger";
import { z } from "zod";
import { dataSettings } from "./config.ts";
import { type DataDir, DataDirInUse, openDataDir } from "./data-dir.ts";

/** What the command reads of the process's configuration: where the records are. */
const keysConfigSchema = z.object({ ...dataSettings, BOOTSTRAP_EMAIL: identitySettings.BOOTSTRAP_EMAIL });

export interface KeysCreateOptions {
  /** Unset: the first organization (the bootstrap's). */
  organization?: string | undefined;
  name: string;
}

/**
 * `pnpm loom keys create`: an organization API key, written into the records
 * the process's configuration names (LOOM_DATA_DIR, or MONGODB_URL), its
 * secret on stdout once. A data directory must be stopped: Loom holds it
 * exclusively, and this takes the same lock (docs/decisions.md, "First start and logs").
 */
export async function keysCreate(options: KeysCreateOptions, logger: Logger): Promise<void> {
  const config = loadConfig(keysConfigSchema);
  const dataDir = config.MONGODB_URL ? undefined : openStoppedDataDir(config.LOOM_DATA_DIR, logger);
  const store = await openIdentityStore({
    url: config.MONGODB_URL,
    db: `${config.MONGODB_DB_PREFIX}identity`,
    sqlite: dataDir?.sqlite && sharedSqlite(dataDir.sqlite),
  });
  try {
    await store.init();
    const key = await createOperatorKey(
      store,
      { organizationId: options.organization, name: options.name, email: config.BOOTSTRAP_EMAIL },
      logger,
    );
    const where = `organization ${key.organization.id} (${key.organization.name})`;
    process.stderr.write(
      key.bootstrapped
        ? `The records were empty: created the first user (${config.BOOTSTRAP_EMAIL}), ${where} and its API key, shown once:\n`
        : `Created the organization API key "${options.name}" in ${where}, shown once:\n`,
    );
    process.stdout.write(`${key.value}\n`);
  } finally {
    await store.close();
    await dataDir?.close();
  }
}

/** The data directory, if it is one (a mistyped path makes no new one) and no Loom runs on it. */
function openStoppedDataDir(dir: string, logger: Logger): DataDir {
  const path = resolve(dir);
  if (!existsSync(join(path, "loom.db"))) {
    throw new StartupRefused(
      `LOOM_DATA_DIR: ${path} is not a Loom data directory (it has no loom.db): set LOOM_DATA_DIR to the one Loom runs with`,
    );
  }
  try {
    return openDataDir(path, { records: true, logger });
  } catch (error) {
    if (!(error instanceof DataDirInUse)) throw error;
    throw new StartupRefused(
      `the data directory ${path} is in use by a running Loom${error.pid ? ` (pid ${error.pid})` : ""}: stop it first, ` +
        "or create the key through the API with a key you hold (POST /organizations/{organization_id}/api-keys)",
    );
  }
}
