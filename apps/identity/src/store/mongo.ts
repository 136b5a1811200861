import type { Collection, Db } from "mongodb";
import { fromDoc, isDuplicateKey, newestFirstSort, toDoc, type Doc } from "@loom/kit/mongo";
import type { ApiKeyFilter, ApiKeyRecord, IdentityStore, OrganizationRecord, UserRecord } from "./port.ts";

/** MongoDB adapter: the public UUID is `_id`; indexes are created at start. */
export function createMongoIdentityStore(db: Db, ping: () => Promise<boolean>, close: () => Promise<void>): IdentityStore {
  const users: Collection<Doc<UserRecord>> = db.collection("users");
  const organizations: Collection<Doc<OrganizationRecord>> = db.collection("organizations");
  const keys: Collection<Doc<ApiKeyRecord>> = db.collection("api_keys");
  const meta: Collection<{ _id: string; at: Date }> = db.collection("meta");

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

    async insertApiKey(key) {
      await keys.insertOne(toDoc(key));
    },
    getApiKey: async (id) => fromDoc<ApiKeyRecord>(await keys.findOne({ _id: id })),
    findApiKeyBySecretHash: async (secretHash) => fromDoc<ApiKeyRecord>(await keys.findOne({ secretHash })),
    async renameApiKey(id, name, at) {
      const doc = await keys.findOneAndUpdate({ _id: id }, { $set: { name, updatedAt: at } }, { returnDocument: "after" });
      return fromDoc<ApiKeyRecord>(doc);
    },
    async touchApiKey(id, at, seen) {
      await keys.updateOne({ _id: id, lastUsed: seen }, { $set: { lastUsed: at } });
    },
    deleteApiKey: async (id) => (await keys.deleteOne({ _id: id })).deletedCount === 1,
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

