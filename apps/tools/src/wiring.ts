import { pinnedConnections } from "@loom/outbound/connections";
import { outboundPolicy } from "@loom/outbound/policy";
import type { RpcService } from "@loom/server/rpc-service";
import { openStore, type StoreSettings } from "@loom/store/open";
import type { Logger } from "@loom/telemetry/logger";
import type { CallLimits } from "./calls/call-scope.ts";
import type { SecretsSettings, ToolCallSettings } from "./config.ts";
import { type SecretKeyring, secretKeyring } from "./secret-keys.ts";
import { resealWithCurrentKey } from "./secret-rotation.ts";
import type { SecretValues } from "./secret-values.ts";
import { createToolsService } from "./service.ts";
import type { ToolsStore } from "./store/port.ts";
import { createSqliteToolsStore } from "./store/sqlite.ts";
import { createSecretValues } from "./stored-secret-values.ts";
import { createToolRunSweep } from "./tool-run-sweep.ts";

/** The tools service as its process holds it: with its store (tests write the state a stopped process leaves). */
export type WiredToolsService = RpcService & { store: ToolsStore };

/** MongoDB when a URL is given, else SQLite; a call's read of its tool is acknowledged by its tool run's insert. */
export const openToolsStore = (settings: StoreSettings): Promise<ToolsStore> =>
  openStore(
    settings,
    {
      sqlite: createSqliteToolsStore,
      mongo: async (m) => (await import("./store/mongo.ts")).createMongoToolsStore(m.db, m.ping, m.close),
    },
    { getForCall: "by durable()" },
  );

/** The keys of secret values, from SECRETS_KEY and SECRETS_PREVIOUS_KEYS. */
export const keyringOf = (settings: SecretsSettings): SecretKeyring =>
  secretKeyring(settings.SECRETS_KEY, settings.SECRETS_PREVIOUS_KEYS);

/** The values of secrets, for the part of the tools service that calls tool servers (secret-values.ts). */
export const secretValuesOf = (store: ToolsStore, keyring: SecretKeyring): SecretValues =>
  createSecretValues({ store, keyring });

/**
 * The bounds of every call of a tool's server, from the settings and the deployment: loopback is allowed in the
 * all-in-one and refused in the split deployment (docs/decisions.md, "Outbound requests on a user's behalf"). The
 * calls share keep-alive connections, each pinned to the address its calls' checks gave.
 */
export const callLimits = (settings: ToolCallSettings, deployment: { allowLoopback: boolean }): CallLimits => ({
  policy: outboundPolicy({ allowedHosts: settings.TOOL_ALLOWED_HOSTS, allowLoopback: deployment.allowLoopback }),
  timeoutMs: settings.TOOL_CALL_TIMEOUT_MS,
  maxResponseBytes: settings.TOOL_MAX_RESPONSE_BYTES,
  connections: pinnedConnections(),
});

/**
 * Store → service: shared by main.ts, the all-in-one process and the tests.
 * Values sealed with a previous key are resealed with the current one before
 * the service answers (a rotation's second half). The sweep of tool runs a
 * stopped process left RUNNING runs at start and every `sweepEveryMs` until
 * the service closes.
 */
export async function wireTools(
  store: ToolsStore,
  settings: { secrets: SecretsSettings; limits: CallLimits; sweepEveryMs: number },
  logger: Logger,
): Promise<WiredToolsService> {
  await store.init();
  const keyring = keyringOf(settings.secrets);
  await resealWithCurrentKey({ store, keyring, logger });
  const service = createToolsService({
    store,
    keyring,
    limits: settings.limits,
    secrets: secretValuesOf(store, keyring),
  });
  const sweeping = createToolRunSweep({ store, callTimeoutMs: settings.limits.timeoutMs, logger }).start(
    settings.sweepEveryMs,
  );
  return {
    ...service,
    store,
    close: async () => {
      await sweeping.stop();
      await service.close();
    },
  };
}
