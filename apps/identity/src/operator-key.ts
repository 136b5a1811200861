import { nameProblem } from "@loom/contracts/text";
import { StartupRefused } from "@loom/runtime/shutdown";
import type { Logger } from "@loom/telemetry/logger";
import { newApiKey } from "./api-key-secret.ts";
import { bootstrapIdentity } from "./bootstrap.ts";
import { apiKeyNameMax } from "./service.ts";
import type { IdentityStore, OrganizationRecord } from "./store/port.ts";

export interface OperatorKeyOptions {
  /** Unset: the first organization (the bootstrap's). */
  organizationId?: string | undefined;
  name: string;
  /** The first user's email, should the store be empty (BOOTSTRAP_EMAIL). */
  email: string;
}

export interface OperatorKey {
  /** The secret, to show once. */
  value: string;
  organization: OrganizationRecord;
  /** Whether the store was empty, so this made the first user and organization too. */
  bootstrapped: boolean;
}

/**
 * An organization API key made on the host, beside the API (`pnpm loom keys
 * create`): the way back in for an operator who holds no key. An empty store
 * is bootstrapped as a first start would, its key returned instead of logged.
 */
export async function createOperatorKey(
  store: IdentityStore,
  options: OperatorKeyOptions,
  logger: Logger,
): Promise<OperatorKey> {
  const problem = nameProblem(options.name, 1, apiKeyNameMax);
  if (problem) throw new StartupRefused(`--name: ${problem}`);
  if (options.organizationId === undefined && (await store.countUsers()) === 0) {
    const value = await bootstrapIdentity(store, { email: options.email }, logger);
    const organization = await store.firstOrganization();
    if (value !== undefined && organization) return { value, organization, bootstrapped: true };
  }
  const organization =
    options.organizationId === undefined
      ? await store.firstOrganization()
      : await store.getOrganization(options.organizationId);
  if (!organization)
    throw new StartupRefused(
      options.organizationId === undefined ? "no organization yet" : `no organization ${options.organizationId}`,
    );
  // A key records who made it: the organization's first member stands for the operator.
  const creator = (await store.listUsersOf(organization.id)).at(-1);
  if (!creator) throw new StartupRefused(`organization ${organization.id} has no members`);
  const { record, value } = newApiKey(
    { organizationId: organization.id, name: options.name, createdBy: creator.id },
    new Date(),
  );
  await store.insertApiKey(record);
  logger.info(
    { api_key_id: record.id, organization_id: organization.id, name: options.name },
    "created an organization API key on the host",
  );
  return { value, organization, bootstrapped: false };
}
