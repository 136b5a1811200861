import { inMemoryLifecycle } from "@loom/kit/in-memory-store";
import { plainCopy } from "@loom/kit/plain-copy";
import type { ApiKeyFilter, ApiKeyRecord, BillingRecord, IdentityStore, OrganizationRecord, UserRecord } from "./port.ts";
import { newestFirst } from "@loom/kit/paging";

/** The embedded default and the fast test double. Copies on the way in and out, like a database would. */
export function createMemoryIdentityStore(): IdentityStore {
  const users = new Map<string, UserRecord>();
  const organizations = new Map<string, OrganizationRecord>();
  const keys = new Map<string, ApiKeyRecord>();
  const billing = new Map<string, BillingRecord>();
  const stripeEvents = new Set<string>();
  let bootstrapped = false;
  const copy = plainCopy;
  const matches = (key: ApiKeyRecord, filter: ApiKeyFilter) =>
    key.organizationId === filter.organizationId && ("userId" in filter ? key.userId === filter.userId : key.userId === undefined);

  return {
    ...inMemoryLifecycle,

    async insertOrganization(org) {
      organizations.set(org.id, copy(org));
    },
    async insertUser(user) {
      if ([...users.values()].some((u) => u.subject === user.subject)) return false;
      users.set(user.id, copy(user));
      return true;
    },
    getUser: async (id) => copy(users.get(id)),
    findUserBySubject: async (subject) => copy([...users.values()].find((u) => u.subject === subject)),
    listUsersOf: async (organizationId) =>
      copy([...users.values()].filter((u) => u.organizations.includes(organizationId)).sort(newestFirst)),
    countUsers: async () => users.size,
    async claimBootstrap() {
      if (bootstrapped) return false;
      bootstrapped = true;
      return true;
    },

    getBilling: async (organizationId) => copy(billing.get(organizationId)),
    async setStripeCustomer(organizationId, customerId) {
      const record = billing.get(organizationId) ?? { organizationId };
      record.stripeCustomerId ??= customerId;
      billing.set(organizationId, record);
      return record.stripeCustomerId;
    },
    findOrganizationByStripeCustomer: async (customerId) =>
      [...billing.values()].find((b) => b.stripeCustomerId === customerId)?.organizationId,
    async recordSubscription(organizationId, subscription) {
      const record = billing.get(organizationId) ?? { organizationId };
      if (record.subscription && record.subscription.eventCreatedAt > subscription.eventCreatedAt) return false;
      record.subscription = copy(subscription);
      billing.set(organizationId, record);
      return true;
    },
    stripeEventSeen: async (eventId) => stripeEvents.has(eventId),
    async markStripeEventSeen(eventId) {
      stripeEvents.add(eventId);
    },

    async insertApiKey(key) {
      keys.set(key.id, copy(key));
    },
    getApiKey: async (id) => copy(keys.get(id)),
    findApiKeyBySecretHash: async (hash) => copy([...keys.values()].find((k) => k.secretHash === hash)),
    async renameApiKey(id, name, at) {
      const key = keys.get(id);
      if (!key) return undefined;
      key.name = name;
      key.updatedAt = at;
      return copy(key);
    },
    async touchApiKey(id, at, seen) {
      const key = keys.get(id);
      if (key && key.lastUsed.getTime() === seen.getTime()) key.lastUsed = at;
    },
    deleteApiKey: async (id) => keys.delete(id),
    async listApiKeys(filter, skip, limit) {
      const all = [...keys.values()].filter((k) => matches(k, filter)).sort(newestFirst);
      return { items: copy(all.slice(skip, skip + limit)), totalCount: all.length };
    },
  };
}
