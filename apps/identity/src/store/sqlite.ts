import { heldRows } from "@loom/store/held-rows";
import {
  dateOf,
  isUniqueViolation,
  newestFirstOrder,
  optional,
  type Row,
  type SqliteHandle,
  sqliteLifecycle,
} from "@loom/store/sqlite";
import type {
  ApiKeyFilter,
  ApiKeyRecord,
  BillingRecord,
  IdentityStore,
  OrganizationRecord,
  UserRecord,
} from "./port.ts";

/** Schema versions of the identity tables (kit `migrate`): append, never edit. */
const migrations = [
  `CREATE TABLE identity_organizations (id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at INTEGER NOT NULL);
   CREATE TABLE identity_users (id TEXT PRIMARY KEY, subject TEXT NOT NULL UNIQUE, email TEXT NOT NULL, name TEXT,
     created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
   CREATE TABLE identity_memberships (user_id TEXT NOT NULL REFERENCES identity_users (id), organization_id TEXT NOT NULL,
     position INTEGER NOT NULL, PRIMARY KEY (user_id, organization_id));
   CREATE INDEX identity_memberships_by_organization ON identity_memberships (organization_id);
   CREATE TABLE identity_bootstrap (id INTEGER PRIMARY KEY CHECK (id = 1), at INTEGER NOT NULL);
   CREATE TABLE identity_api_keys (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, user_id TEXT, name TEXT NOT NULL,
     secret_hash TEXT NOT NULL UNIQUE, created_by TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, last_used INTEGER NOT NULL);
   CREATE INDEX identity_api_keys_by_owner ON identity_api_keys (organization_id, user_id, created_at DESC, id DESC);
   CREATE TABLE identity_billing (organization_id TEXT PRIMARY KEY, stripe_customer_id TEXT UNIQUE, subscription TEXT);
   CREATE TABLE identity_stripe_events (id TEXT PRIMARY KEY, at INTEGER NOT NULL);`,
];

const apiKeyOf = (row: Row | undefined): ApiKeyRecord | undefined =>
  row && {
    id: row.id as string,
    organizationId: row.organization_id as string,
    ...(row.user_id === null ? {} : { userId: row.user_id as string }),
    name: row.name as string,
    secretHash: row.secret_hash as string,
    createdBy: row.created_by as string,
    createdAt: dateOf(row.created_at)!,
    updatedAt: dateOf(row.updated_at)!,
    lastUsed: dateOf(row.last_used)!,
  };

/** How many API keys `createSqliteIdentityStore` keeps in memory at most: past it, it forgets them all. */
const heldKeysLimit = 10_000;

/**
 * SQLite adapter (the embedded store): one table per record kind, times as epoch milliseconds.
 *
 * API keys read by id are also held in memory, written through (the
 * database is this process's alone, and every write to a key passes here):
 * GetApiKey and every principal check read the same few keys over and over
 * (a row read costs ~12 µs in the loaded process, a tenth of the request).
 * A key leaves memory when it is deleted, and all of them when more than
 * `heldKeysLimit` are held or when writes are undone (kit `heldRows`).
 */
export function createSqliteIdentityStore(handle: SqliteHandle): IdentityStore {
  const { prepare } = handle;
  const heldKeys = heldRows<ApiKeyRecord>(handle, heldKeysLimit);
  /** A copy for the caller: the held record is the store's own. */
  const copyOf = (key: ApiKeyRecord | undefined) => key && { ...key };
  const organizationOf = (row: Row | undefined): OrganizationRecord | undefined =>
    row && { id: row.id as string, name: row.name as string, createdAt: dateOf(row.created_at)! };
  const userOf = (row: Row | undefined): UserRecord | undefined => {
    if (!row) return undefined;
    const organizations = prepare(
      "SELECT organization_id FROM identity_memberships WHERE user_id = ? ORDER BY position",
    ).all(row.id as string);
    return {
      id: row.id as string,
      email: row.email as string,
      ...(row.name === null ? {} : { name: row.name as string }),
      organizations: organizations.map((m) => m.organization_id as string),
      subject: row.subject as string,
      createdAt: dateOf(row.created_at)!,
      updatedAt: dateOf(row.updated_at)!,
    };
  };
  const billingOf = (row: Row | undefined): BillingRecord | undefined => {
    if (!row) return undefined;
    const subscription = optional<string>(row.subscription);
    const parsed = subscription === undefined ? undefined : (JSON.parse(subscription) as { eventCreatedAt: number });
    return {
      organizationId: row.organization_id as string,
      ...(row.stripe_customer_id === null ? {} : { stripeCustomerId: row.stripe_customer_id as string }),
      ...(parsed
        ? {
            subscription: {
              ...(parsed as unknown as BillingRecord["subscription"] & object),
              eventCreatedAt: new Date(parsed.eventCreatedAt),
            },
          }
        : {}),
    };
  };
  const keyWhere = (filter: ApiKeyFilter): [string, string[]] =>
    "userId" in filter
      ? ["organization_id = ? AND user_id = ?", [filter.organizationId, filter.userId]]
      : ["organization_id = ? AND user_id IS NULL", [filter.organizationId]];

  return {
    ...sqliteLifecycle(handle, "identity", migrations),

    async insertOrganization(org) {
      prepare("INSERT INTO identity_organizations (id, name, created_at) VALUES (?, ?, ?)").run(
        org.id,
        org.name,
        org.createdAt.getTime(),
      );
    },
    async insertUser(user) {
      try {
        handle.transaction(() => {
          prepare(
            "INSERT INTO identity_users (id, subject, email, name, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
          ).run(
            user.id,
            user.subject,
            user.email,
            user.name ?? null,
            user.createdAt.getTime(),
            user.updatedAt.getTime(),
          );
          const member = prepare(
            "INSERT INTO identity_memberships (user_id, organization_id, position) VALUES (?, ?, ?)",
          );
          user.organizations.forEach((organizationId, position) => member.run(user.id, organizationId, position));
        });
        return true;
      } catch (error) {
        if (isUniqueViolation(error)) return false;
        throw error;
      }
    },
    getOrganization: async (id) => organizationOf(prepare("SELECT * FROM identity_organizations WHERE id = ?").get(id)),
    firstOrganization: async () =>
      organizationOf(prepare("SELECT * FROM identity_organizations ORDER BY created_at, id LIMIT 1").get()),
    getUser: async (id) => userOf(prepare("SELECT * FROM identity_users WHERE id = ?").get(id)),
    findUserBySubject: async (subject) =>
      userOf(prepare("SELECT * FROM identity_users WHERE subject = ?").get(subject)),
    listUsersOf: async (organizationId) =>
      prepare(
        "SELECT u.* FROM identity_users u JOIN identity_memberships m ON m.user_id = u.id WHERE m.organization_id = ? ORDER BY u.created_at DESC, u.id DESC",
      )
        .all(organizationId)
        .map((row) => userOf(row)!),
    countUsers: async () => Number(prepare("SELECT count(*) AS n FROM identity_users").get()!.n),
    async claimBootstrap(at) {
      return (
        prepare("INSERT INTO identity_bootstrap (id, at) VALUES (1, ?) ON CONFLICT DO NOTHING").run(at.getTime())
          .changes === 1
      );
    },

    getBilling: async (organizationId) =>
      billingOf(prepare("SELECT * FROM identity_billing WHERE organization_id = ?").get(organizationId)),
    async setStripeCustomer(organizationId, customerId) {
      return handle.transaction(() => {
        prepare("INSERT INTO identity_billing (organization_id) VALUES (?) ON CONFLICT DO NOTHING").run(organizationId);
        prepare(
          "UPDATE identity_billing SET stripe_customer_id = ? WHERE organization_id = ? AND stripe_customer_id IS NULL",
        ).run(customerId, organizationId);
        return prepare("SELECT stripe_customer_id FROM identity_billing WHERE organization_id = ?").get(organizationId)!
          .stripe_customer_id as string;
      });
    },
    findOrganizationByStripeCustomer: async (customerId) =>
      optional<string>(
        prepare("SELECT organization_id FROM identity_billing WHERE stripe_customer_id = ?").get(customerId)
          ?.organization_id,
      ),
    async recordSubscription(organizationId, subscription) {
      return handle.transaction(() => {
        const stored = billingOf(
          prepare("SELECT * FROM identity_billing WHERE organization_id = ?").get(organizationId),
        );
        if (stored?.subscription && stored.subscription.eventCreatedAt > subscription.eventCreatedAt) return false;
        const json = JSON.stringify({ ...subscription, eventCreatedAt: subscription.eventCreatedAt.getTime() });
        prepare(
          "INSERT INTO identity_billing (organization_id, subscription) VALUES (?, ?) ON CONFLICT (organization_id) DO UPDATE SET subscription = excluded.subscription",
        ).run(organizationId, json);
        return true;
      });
    },
    stripeEventSeen: async (eventId) =>
      prepare("SELECT 1 FROM identity_stripe_events WHERE id = ?").get(eventId) !== undefined,
    async markStripeEventSeen(eventId, at) {
      prepare("INSERT INTO identity_stripe_events (id, at) VALUES (?, ?) ON CONFLICT DO NOTHING").run(
        eventId,
        at.getTime(),
      );
    },

    async insertApiKey(key) {
      prepare(
        "INSERT INTO identity_api_keys (id, organization_id, user_id, name, secret_hash, created_by, created_at, updated_at, last_used) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      ).run(
        key.id,
        key.organizationId,
        key.userId ?? null,
        key.name,
        key.secretHash,
        key.createdBy,
        key.createdAt.getTime(),
        key.updatedAt.getTime(),
        key.lastUsed.getTime(),
      );
    },
    async getApiKey(id) {
      const kept = heldKeys.get(id);
      if (kept) return copyOf(kept);
      const key = apiKeyOf(prepare("SELECT * FROM identity_api_keys WHERE id = ?").get(id));
      if (key) heldKeys.hold(key.id, key);
      return copyOf(key);
    },
    findApiKeyBySecretHash: async (hash) =>
      apiKeyOf(prepare("SELECT * FROM identity_api_keys WHERE secret_hash = ?").get(hash)),
    async renameApiKey(id, name, at) {
      const key = apiKeyOf(
        prepare("UPDATE identity_api_keys SET name = ?, updated_at = ? WHERE id = ? RETURNING *").get(
          name,
          at.getTime(),
          id,
        ),
      );
      if (key) heldKeys.hold(key.id, key);
      return copyOf(key);
    },
    async touchApiKey(id, at, seen) {
      const touched =
        prepare("UPDATE identity_api_keys SET last_used = ? WHERE id = ? AND last_used = ?").run(
          at.getTime(),
          id,
          seen.getTime(),
        ).changes === 1;
      const kept = heldKeys.get(id);
      if (touched && kept) heldKeys.hold(id, { ...kept, lastUsed: new Date(at.getTime()) });
    },
    async deleteApiKey(id) {
      heldKeys.forget(id);
      return prepare("DELETE FROM identity_api_keys WHERE id = ?").run(id).changes === 1;
    },
    async countApiKeys(organizationId, userId) {
      const row =
        userId === undefined
          ? prepare("SELECT count(*) AS n FROM identity_api_keys WHERE organization_id = ?").get(organizationId)
          : prepare("SELECT count(*) AS n FROM identity_api_keys WHERE organization_id = ? AND user_id = ?").get(
              organizationId,
              userId,
            );
      return Number(row!.n);
    },
    async listApiKeys(filter, skip, limit) {
      const [where, params] = keyWhere(filter);
      const totalCount = Number(
        prepare(`SELECT count(*) AS n FROM identity_api_keys WHERE ${where}`).get(...params)!.n,
      );
      const items = prepare(
        `SELECT * FROM identity_api_keys WHERE ${where} ORDER BY ${newestFirstOrder} LIMIT ? OFFSET ?`,
      ).all(...params, limit, skip);
      return { items: items.map((row) => apiKeyOf(row)!), totalCount };
    },
  };
}
