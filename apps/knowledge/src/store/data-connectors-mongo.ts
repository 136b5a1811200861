import { type Doc, fromDoc, newestFirstSort, toDoc } from "@loom/store/mongo";
import type { Collection, Db } from "mongodb";
import type { DataConnectorRecord, DataConnectorStore } from "./data-connectors.ts";
import type { KnowledgeBaseRecord } from "./port.ts";

/** MongoDB adapter of the connectors part: a collection of connectors, scoped by organizationId in every query. */
export function createMongoDataConnectorStore(db: Db): DataConnectorStore & { init(): Promise<void> } {
  const connectors: Collection<Doc<DataConnectorRecord>> = db.collection("data_connectors");
  const knowledgeBases: Collection<Doc<KnowledgeBaseRecord>> = db.collection("knowledge_bases");
  return {
    async init() {
      await connectors.createIndex({ organizationId: 1, createdAt: -1, _id: -1 });
    },
    async insertDataConnector(connector) {
      await connectors.insertOne(toDoc(connector));
    },
    getDataConnector: async (organizationId, id) =>
      fromDoc<DataConnectorRecord>(await connectors.findOne({ _id: id, organizationId })),
    updateDataConnector: async (organizationId, id, patch, at) =>
      fromDoc<DataConnectorRecord>(
        await connectors.findOneAndUpdate(
          { _id: id, organizationId },
          { $set: { ...patch, updatedAt: at } },
          { returnDocument: "after" },
        ),
      ),
    // No transaction across documents (FerretDB): the connector first, then its id out of the knowledge bases.
    async deleteDataConnector(organizationId, id, at) {
      if ((await connectors.deleteOne({ _id: id, organizationId })).deletedCount !== 1) return false;
      await knowledgeBases.updateMany(
        { organizationId, dataConnectorIds: id },
        { $pull: { dataConnectorIds: id }, $set: { updatedAt: at } },
      );
      return true;
    },
    async listDataConnectors(organizationId, skip, limit) {
      const [docs, totalCount] = await Promise.all([
        connectors.find({ organizationId }).sort(newestFirstSort).skip(skip).limit(limit).toArray(),
        connectors.countDocuments({ organizationId }),
      ]);
      return { items: docs.map((d) => fromDoc<DataConnectorRecord>(d)!), totalCount };
    },
    existingDataConnectorIds: async (organizationId, ids) =>
      new Set(
        (await connectors.find({ _id: { $in: [...ids] }, organizationId }, { projection: { _id: 1 } }).toArray()).map(
          (d) => d._id,
        ),
      ),
  };
}
