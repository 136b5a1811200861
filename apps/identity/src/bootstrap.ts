import { newId } from "@loom/contracts/ids";
import type { Logger } from "@loom/telemetry/logger";
import { newApiKey } from "./api-key-secret.ts";
import type { IdentityStore } from "./store/port.ts";

export interface BootstrapOptions {
  email: string;
  /** Exact key value to seed (from a deployment secret); generated when absent. */
  apiKey?: string;
}

/**
 * With an empty store, creates the first user, organization and organization
 * API key (docs/behaviour.md §3). The store's bootstrap claim makes concurrent
 * first starts of several replicas create them once. Returns the generated
 * key value when one was generated, so the caller can print it once.
 */
export async function bootstrapIdentity(
  store: IdentityStore,
  options: BootstrapOptions,
  logger: Logger,
): Promise<string | undefined> {
  if ((await store.countUsers()) > 0) return undefined;
  const now = new Date();
  if (!(await store.claimBootstrap(now))) return undefined;
  const organizationId = newId();
  const userId = newId();
  await store.insertOrganization({ id: organizationId, name: "Default organization", createdAt: now });
  await store.insertUser({
    id: userId,
    subject: `local:${userId}`,
    email: options.email,
    organizations: [organizationId],
    createdAt: now,
    updatedAt: now,
  });
  const { record, value } = newApiKey({ organizationId, name: "bootstrap", createdBy: userId }, now, options.apiKey);
  await store.insertApiKey(record);
  logger.info(
    { email: options.email, organization_id: organizationId, user_id: userId },
    "bootstrapped the first user, organization and API key",
  );
  return options.apiKey ? undefined : value;
}
