import { outboundPolicy } from "@loom/outbound/policy";
import type { RpcService } from "@loom/server/rpc-service";
import { openStore, type StoreSettings } from "@loom/store/open";
import type { CallLimits } from "./calls/call-scope.ts";
import type { ToolCallSettings } from "./config.ts";
import { noSecretValues } from "./no-secret-values.ts";
import type { SecretValues } from "./secret-values.ts";
import { createToolsService } from "./service.ts";
import { createMongoToolsStore } from "./store/mongo.ts";
import type { ToolsStore } from "./store/port.ts";
import { createSqliteToolsStore } from "./store/sqlite.ts";

/** MongoDB when a URL is given, else SQLite. */
export const openToolsStore = (settings: StoreSettings): Promise<ToolsStore> =>
  openStore(settings, {
    sqlite: createSqliteToolsStore,
    mongo: (m) => createMongoToolsStore(m.db, m.ping, m.close),
  });

/**
 * The bounds of every call of a tool's server, from the settings and the deployment: loopback is allowed in the
 * all-in-one and refused in the split deployment (docs/decisions.md, "Outbound requests on a user's behalf").
 */
export const callLimits = (settings: ToolCallSettings, deployment: { allowLoopback: boolean }): CallLimits => ({
  policy: outboundPolicy({ allowedHosts: settings.TOOL_ALLOWED_HOSTS, allowLoopback: deployment.allowLoopback }),
  timeoutMs: settings.TOOL_CALL_TIMEOUT_MS,
  maxResponseBytes: settings.TOOL_MAX_RESPONSE_BYTES,
});

/** Store → service: shared by main.ts, the all-in-one process and the tests. */
export async function wireTools(
  store: ToolsStore,
  limits: CallLimits,
  secrets: SecretValues = noSecretValues,
): Promise<RpcService> {
  await store.init();
  return createToolsService({ store, limits, secrets });
}
