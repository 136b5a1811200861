import { type Doc, fromDoc, newestFirstSort, toDoc } from "@loom/store/mongo";
import type { Collection, Db } from "mongodb";
import type { AssistantRecord, AssistantsStore } from "./port.ts";
import { createMongoRulesetStore } from "./rulesets-mongo.ts";

/** MongoDB adapter: a collection of assistants (and those of the rulesets part), scoped by organizationId in every query. */
export function createMongoAssistantsStore(
  db: Db,
  ping: () => Promise<boolean>,
  close: () => Promise<void>,
): AssistantsStore {
  const assistants: Collection<Doc<AssistantRecord>> = db.collection("assistants");
  const rulesetStore = createMongoRulesetStore(db);
  return {
    ...rulesetStore,
    async init() {
      await assistants.createIndex({ organizationId: 1, createdAt: -1, _id: -1 });
      await assistants.createIndex({ organizationId: 1, rulesetIds: 1 });
      await rulesetStore.init();
    },
    ready: ping,
    close,
    async insert(assistant) {
      await assistants.insertOne(toDoc(assistant));
    },
    get: async (organizationId, id) => fromDoc<AssistantRecord>(await assistants.findOne({ _id: id, organizationId })),
    async update(organizationId, id, patch, at) {
      const doc = await assistants.findOneAndUpdate(
        { _id: id, organizationId },
        { $set: { ...patch, updatedAt: at } },
        { returnDocument: "after" },
      );
      return fromDoc<AssistantRecord>(doc);
    },
    delete: async (organizationId, id) => (await assistants.deleteOne({ _id: id, organizationId })).deletedCount === 1,
    async list(organizationId, skip, limit) {
      const [docs, totalCount] = await Promise.all([
        assistants.find({ organizationId }).sort(newestFirstSort).skip(skip).limit(limit).toArray(),
        assistants.countDocuments({ organizationId }),
      ]);
      return { items: docs.map((d) => fromDoc<AssistantRecord>(d)!), totalCount };
    },
    namingRuleset: async (organizationId, rulesetId, limit) =>
      (
        await assistants
          .find({ organizationId, rulesetIds: rulesetId }, { projection: { _id: 1 } })
          .sort(newestFirstSort)
          .limit(limit)
          .toArray()
      ).map((d) => d._id),
  };
}
