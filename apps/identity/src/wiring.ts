import type { Bus } from "@loom/bus/bus";
import { BillingService } from "@loom/proto/identity/v1/billing_pb";
import type { RpcService } from "@loom/server/rpc-service";
import { openStore, type StoreSettings } from "@loom/store/open";
import type { Logger } from "@loom/telemetry/logger";
import { createAccessTokenVerifier } from "./access-tokens.ts";
import { type BillingSettings, createBillingService } from "./billing/service.ts";
import { bootstrapIdentity } from "./bootstrap.ts";
import { createIdentityService, defaultApiKeyCaps } from "./service.ts";
import type { IdentityStore } from "./store/port.ts";
import { createSqliteIdentityStore } from "./store/sqlite.ts";

export interface IdentitySettings extends BillingSettings {
  BOOTSTRAP_EMAIL: string;
  BOOTSTRAP_API_KEY?: string | undefined;
  ACCESS_TOKEN_SECRET?: string | undefined;
  OIDC_JWKS_URL?: string | undefined;
  OIDC_ISSUER?: string | undefined;
  OIDC_AUDIENCE?: string | undefined;
  ACCESS_TOKEN_MAX_LIFETIME_SECONDS?: number | undefined;
  /** Unset: the defaults (defaultApiKeyCaps). */
  API_KEYS_PER_USER?: number | undefined;
  API_KEYS_PER_ORGANIZATION?: number | undefined;
}

/** MongoDB when a URL is given, else SQLite. */
export const openIdentityStore = (settings: StoreSettings): Promise<IdentityStore> =>
  openStore(settings, {
    sqlite: createSqliteIdentityStore,
    mongo: async (m) => (await import("./store/mongo.ts")).createMongoIdentityStore(m.db, m.ping, m.close),
  });

/**
 * Store → service: shared by main.ts, the all-in-one process and the tests.
 * `bootstrap` makes the first user, organization and key in an empty store
 * and resolves the generated key (undefined when seeded, or when there were
 * users already). A process calls it last, once everything that can fail at
 * its start has started (listeners included): a start that failed after it
 * would lose a key that was never printed (docs/decisions.md, "First start and logs").
 */
export async function wireIdentity(
  store: IdentityStore,
  settings: IdentitySettings,
  logger: Logger,
  bus?: Bus,
): Promise<{ service: RpcService; bootstrap: () => Promise<string | undefined> }> {
  await store.init();
  const bootstrap = () =>
    bootstrapIdentity(store, { email: settings.BOOTSTRAP_EMAIL, apiKey: settings.BOOTSTRAP_API_KEY }, logger);
  const accessTokens = createAccessTokenVerifier({
    secret: settings.ACCESS_TOKEN_SECRET,
    jwksUrl: settings.OIDC_JWKS_URL,
    issuer: settings.OIDC_ISSUER,
    audience: settings.OIDC_AUDIENCE,
    maxLifetimeSeconds: settings.ACCESS_TOKEN_MAX_LIFETIME_SECONDS,
  });
  const apiKeyCaps = {
    perUser: settings.API_KEYS_PER_USER ?? defaultApiKeyCaps.perUser,
    perOrganization: settings.API_KEYS_PER_ORGANIZATION ?? defaultApiKeyCaps.perOrganization,
  };
  const identity = createIdentityService({ store, accessTokens, logger, bus, apiKeyCaps });
  const billing = createBillingService({ store, settings, logger });
  // Billing is identity's: it owns organizations. One service, two contracts.
  const service: RpcService = {
    ...identity,
    routes(router) {
      identity.routes(router);
      router.service(BillingService, billing);
    },
  };
  return { service, bootstrap };
}
