import { type Doc, fromDoc, newestFirstSort, toDoc } from "@loom/store/mongo";
import type { Collection, Db } from "mongodb";
import { createMongoDataConnectorStore } from "./data-connectors-mongo.ts";
import { createMongoJobStore } from "./jobs-mongo.ts";
import type { KnowledgeBaseRecord, KnowledgeBasesStore } from "./port.ts";
import { createMongoQueryStore } from "./queries-mongo.ts";

/** MongoDB adapter: a collection of knowledge bases (and the connectors part's), scoped by organizationId in every query. */
export function createMongoKnowledgeBasesStore(
  db: Db,
  ping: () => Promise<boolean>,
  close: () => Promise<void>,
): KnowledgeBasesStore {
  const knowledgeBases: Collection<Doc<KnowledgeBaseRecord>> = db.collection("knowledge_bases");
  const connectorStore = createMongoDataConnectorStore(db);
  const jobStore = createMongoJobStore(db);
  const queryStore = createMongoQueryStore(db);
  return {
    ...connectorStore,
    ...jobStore,
    ...queryStore,
    async init() {
      await knowledgeBases.createIndex({ organizationId: 1, createdAt: -1, _id: -1 });
      await knowledgeBases.createIndex({ organizationId: 1, dataConnectorIds: 1 });
      await connectorStore.init();
      await jobStore.init();
      await queryStore.init();
    },
    ready: ping,
    close,
    async insert(kb) {
      await knowledgeBases.insertOne(toDoc(kb));
    },
    get: async (organizationId, id) =>
      fromDoc<KnowledgeBaseRecord>(await knowledgeBases.findOne({ _id: id, organizationId })),
    update: async (organizationId, id, patch, at) =>
      fromDoc<KnowledgeBaseRecord>(
        await knowledgeBases.findOneAndUpdate(
          { _id: id, organizationId },
          { $set: { ...patch, updatedAt: at } },
          { returnDocument: "after" },
        ),
      ),
    delete: async (organizationId, id) =>
      (await knowledgeBases.deleteOne({ _id: id, organizationId })).deletedCount === 1,
    getMany: async (organizationId, ids) =>
      (await knowledgeBases.find({ _id: { $in: [...ids] }, organizationId }).toArray()).map(
        (d) => fromDoc<KnowledgeBaseRecord>(d)!,
      ),
    async list(organizationId, skip, limit) {
      const [docs, totalCount] = await Promise.all([
        knowledgeBases.find({ organizationId }).sort(newestFirstSort).skip(skip).limit(limit).toArray(),
        knowledgeBases.countDocuments({ organizationId }),
      ]);
      return { items: docs.map((d) => fromDoc<KnowledgeBaseRecord>(d)!), totalCount };
    },
  };
}
