import { type Doc, fromDoc, isDuplicateKey, newestFirstSort, toDoc } from "@loom/store/mongo";
import type { Collection, Db } from "mongodb";
import type {
  ApiKeyFilter,
  ApiKeyRecord,
  BillingRecord,
  IdentityStore,
  OrganizationRecord,
  UserRecord,
} from "./port.ts";

type BillingDoc = Omit<BillingRecord, "organizationId"> & { _id: string };

/** MongoDB adapter: the public UUID is `_id`; indexes are created at start. */
export function createMongoIdentityStore(
  db: Db,
  ping: () => Promise<boolean>,
  close: () => Promise<void>,
): IdentityStore {
  const users: Collection<Doc<UserRecord>> = db.collection("users");
  const organizations: Collection<Doc<OrganizationRecord>> = db.collection("organizations");
  const keys: Collection<Doc<ApiKeyRecord>> = db.collection("api_keys");
  const meta: Collection<{ _id: string; at: Date }> = db.collection("meta");
  /** `_id` is the organization id. */
  const billing: Collection<BillingDoc> = db.collection("billing");
  const stripeEvents: Collection<{ _id: string; at: Date }> = db.collection("stripe_events");
  const billingOf = (doc: BillingDoc | null): BillingRecord | undefined => {
    if (!doc) return undefined;
    const { _id, ...rest } = doc;
    return { organizationId: _id, ...rest };
  };

  const keyQuery = (filter: ApiKeyFilter) =>
    "userId" in filter
      ? { organizationId: filter.organizationId, userId: filter.userId }
      : { organizationId: filter.organizationId, userId: { $exists: false } };

  return {
    async init() {
      await users.createIndex({ subject: 1 }, { unique: true });
      await users.createIndex({ organizations: 1 });
      await keys.createIndex({ secretHash: 1 }, { unique: true });
      await keys.createIndex({ organizationId: 1, userId: 1, createdAt: -1, _id: -1 });
      await billing.createIndex({ stripeCustomerId: 1 });
    },
    ready: ping,
    close,

    async insertOrganization(org) {
      await organizations.insertOne(toDoc(org));
    },
    async insertUser(user) {
      try {
        await users.insertOne(toDoc(user));
        return true;
      } catch (error) {
        if (isDuplicateKey(error)) return false;
        throw error;
      }
    },
    getOrganization: async (id) => fromDoc<OrganizationRecord>(await organizations.findOne({ _id: id })),
    firstOrganization: async () =>
      fromDoc<OrganizationRecord>(await organizations.find({}).sort({ createdAt: 1, _id: 1 }).limit(1).next()),
    getUser: async (id) => fromDoc<UserRecord>(await users.findOne({ _id: id })),
    findUserBySubject: async (subject) => fromDoc<UserRecord>(await users.findOne({ subject })),
    async listUsersOf(organizationId) {
      const docs = await users.find({ organizations: organizationId }).sort(newestFirstSort).toArray();
      return docs.map((d) => fromDoc<UserRecord>(d)!);
    },
    countUsers: () => users.countDocuments({}),
    async claimBootstrap(at) {
      try {
        await meta.insertOne({ _id: "bootstrap", at });
        return true;
      } catch (error) {
        if (isDuplicateKey(error)) return false;
        throw error;
      }
    },

    getBilling: async (organizationId) => billingOf(await billing.findOne({ _id: organizationId })),
    async setStripeCustomer(organizationId, customerId) {
      // An upsert on _id: when the document has a customer already, the filter misses and the insert fails on _id.
      try {
        await billing.updateOne(
          { _id: organizationId, stripeCustomerId: { $exists: false } },
          { $set: { stripeCustomerId: customerId } },
          { upsert: true },
        );
      } catch (error) {
        if (!isDuplicateKey(error)) throw error; // the document exists with a customer already
      }
      const doc = await billing.findOne({ _id: organizationId });
      return doc!.stripeCustomerId!;
    },
    findOrganizationByStripeCustomer: async (customerId) =>
      (await billing.findOne({ stripeCustomerId: customerId }))?._id,
    async recordSubscription(organizationId, subscription) {
      const olderOrNone = {
        $or: [
          { subscription: { $exists: false } },
          { "subscription.eventCreatedAt": { $lte: subscription.eventCreatedAt } },
        ],
      };
      try {
        await billing.updateOne({ _id: organizationId, ...olderOrNone }, { $set: { subscription } }, { upsert: true });
        return true;
      } catch (error) {
        if (isDuplicateKey(error)) return false; // the document exists with a newer subscription
        throw error;
      }
    },
    stripeEventSeen: async (eventId) => (await stripeEvents.countDocuments({ _id: eventId }, { limit: 1 })) > 0,
    async markStripeEventSeen(eventId, at) {
      await stripeEvents.updateOne({ _id: eventId }, { $setOnInsert: { at } }, { upsert: true });
    },

    async insertApiKey(key) {
      await keys.insertOne(toDoc(key));
    },
    getApiKey: async (id) => fromDoc<ApiKeyRecord>(await keys.findOne({ _id: id })),
    findApiKeyBySecretHash: async (secretHash) => fromDoc<ApiKeyRecord>(await keys.findOne({ secretHash })),
    async renameApiKey(id, name, at) {
      const doc = await keys.findOneAndUpdate(
        { _id: id },
        { $set: { name, updatedAt: at } },
        { returnDocument: "after" },
      );
      return fromDoc<ApiKeyRecord>(doc);
    },
    async touchApiKey(id, at, seen) {
      await keys.updateOne({ _id: id, lastUsed: seen }, { $set: { lastUsed: at } });
    },
    deleteApiKey: async (id) => (await keys.deleteOne({ _id: id })).deletedCount === 1,
    countApiKeys: (organizationId, userId) =>
      keys.countDocuments(userId === undefined ? { organizationId } : { organizationId, userId }),
    async listApiKeys(filter, skip, limit) {
      const query = keyQuery(filter);
      const [docs, totalCount] = await Promise.all([
        keys.find(query).sort(newestFirstSort).skip(skip).limit(limit).toArray(),
        keys.countDocuments(query),
      ]);
      return { items: docs.map((d) => fromDoc<ApiKeyRecord>(d)!), totalCount };
    },
  };
}
