import { type Doc, fromDoc, newestFirstSort, toDoc } from "@loom/store/mongo";
import type { Collection, Db } from "mongodb";
import type { KnowledgeBaseQueryRecord, KnowledgeBaseQueryStore, KnowledgeBaseSearchRecord } from "./queries.ts";

/** MongoDB adapter of the kept queries part: a collection of queries and one of searches, scoped by organizationId in every query. */
export function createMongoQueryStore(db: Db): KnowledgeBaseQueryStore & { init(): Promise<void> } {
  const queries: Collection<Doc<KnowledgeBaseQueryRecord>> = db.collection("knowledge_base_queries");
  const searches: Collection<Doc<KnowledgeBaseSearchRecord>> = db.collection("knowledge_base_searches");
  return {
    async init() {
      await queries.createIndex({ organizationId: 1, knowledgeBaseId: 1, createdAt: -1, _id: -1 });
      await searches.createIndex({ organizationId: 1, knowledgeBaseId: 1, createdAt: -1, _id: -1 });
    },
    async insertQuery(query) {
      await queries.insertOne(toDoc(query));
    },
    getQuery: async (organizationId, id) =>
      fromDoc<KnowledgeBaseQueryRecord>(await queries.findOne({ _id: id, organizationId })),
    async listQueries(organizationId, knowledgeBaseId, skip, limit) {
      const filter = { organizationId, knowledgeBaseId };
      const [docs, totalCount] = await Promise.all([
        queries.find(filter).sort(newestFirstSort).skip(skip).limit(limit).toArray(),
        queries.countDocuments(filter),
      ]);
      return { items: docs.map((d) => fromDoc<KnowledgeBaseQueryRecord>(d)!), totalCount };
    },
    async deleteQueriesOf(organizationId, knowledgeBaseId) {
      await queries.deleteMany({ organizationId, knowledgeBaseId });
      await searches.deleteMany({ organizationId, knowledgeBaseId });
    },
    async insertSearch(search) {
      await searches.insertOne(toDoc(search));
    },
    getSearch: async (organizationId, id) =>
      fromDoc<KnowledgeBaseSearchRecord>(await searches.findOne({ _id: id, organizationId })),
    async listSearches(organizationId, knowledgeBaseId, skip, limit) {
      const filter = { organizationId, knowledgeBaseId };
      const [docs, totalCount] = await Promise.all([
        searches.find(filter).sort(newestFirstSort).skip(skip).limit(limit).toArray(),
        searches.countDocuments(filter),
      ]);
      return { items: docs.map((d) => fromDoc<KnowledgeBaseSearchRecord>(d)!), totalCount };
    },
  };
}
