import { dateOf, newestFirstOrder, type Row, type SqliteHandle } from "@loom/store/sqlite";
import type { KnowledgeBaseQueryRecord, KnowledgeBaseQueryStore, KnowledgeBaseSearchRecord } from "./queries.ts";

/** The kept queries and searches tables: a schema version of the knowledge tables (sqlite.ts). */
export const queriesMigration = `CREATE TABLE knowledge_base_queries (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL,
     knowledge_base_id TEXT NOT NULL, query TEXT NOT NULL, count INTEGER NOT NULL, include_vectors INTEGER NOT NULL,
     mode TEXT NOT NULL, entries TEXT NOT NULL, created_by TEXT NOT NULL, created_at INTEGER NOT NULL);
   CREATE INDEX knowledge_base_queries_by_knowledge_base
     ON knowledge_base_queries (organization_id, knowledge_base_id, created_at DESC, id DESC);
   CREATE TABLE knowledge_base_searches (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL,
     knowledge_base_id TEXT NOT NULL, query TEXT NOT NULL, result TEXT NOT NULL, model TEXT NOT NULL,
     entries TEXT NOT NULL, created_by TEXT NOT NULL, created_at INTEGER NOT NULL);
   CREATE INDEX knowledge_base_searches_by_knowledge_base
     ON knowledge_base_searches (organization_id, knowledge_base_id, created_at DESC, id DESC);`;

const queryOf = (row: Row | undefined): KnowledgeBaseQueryRecord | undefined =>
  row && {
    id: row.id as string,
    organizationId: row.organization_id as string,
    knowledgeBaseId: row.knowledge_base_id as string,
    query: row.query as string,
    count: Number(row.count),
    includeVectors: Number(row.include_vectors) === 1,
    mode: row.mode as KnowledgeBaseQueryRecord["mode"],
    entries: JSON.parse(row.entries as string) as KnowledgeBaseQueryRecord["entries"],
    createdBy: row.created_by as string,
    createdAt: dateOf(row.created_at)!,
  };

const searchOf = (row: Row | undefined): KnowledgeBaseSearchRecord | undefined =>
  row && {
    id: row.id as string,
    organizationId: row.organization_id as string,
    knowledgeBaseId: row.knowledge_base_id as string,
    query: row.query as string,
    result: row.result as string,
    model: row.model as string,
    entries: JSON.parse(row.entries as string) as KnowledgeBaseSearchRecord["entries"],
    createdBy: row.created_by as string,
    createdAt: dateOf(row.created_at)!,
  };

/** SQLite adapter of the kept queries part: one row per query or search, its entries as JSON text. */
export function createSqliteQueryStore(handle: SqliteHandle): KnowledgeBaseQueryStore {
  const { prepare } = handle;
  /** A knowledge base's kept queries or searches (`table`), newest first, one page of them and their count. */
  function newestPage<T>(
    table: "knowledge_base_queries" | "knowledge_base_searches",
    recordOf: (row: Row | undefined) => T | undefined,
    organizationId: string,
    knowledgeBaseId: string,
    skip: number,
    limit: number,
  ): { items: T[]; totalCount: number } {
    const where = "WHERE organization_id = ? AND knowledge_base_id = ?";
    const totalCount = Number(
      prepare(`SELECT count(*) AS n FROM ${table} ${where}`).get(organizationId, knowledgeBaseId)!.n,
    );
    const rows = prepare(`SELECT * FROM ${table} ${where} ORDER BY ${newestFirstOrder} LIMIT ? OFFSET ?`).all(
      organizationId,
      knowledgeBaseId,
      limit,
      skip,
    );
    return { items: rows.map((row) => recordOf(row)!), totalCount };
  }
  return {
    async insertQuery(q) {
      prepare(
        `INSERT INTO knowledge_base_queries (id, organization_id, knowledge_base_id, query, count, include_vectors, mode,
           entries, created_by, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        q.id,
        q.organizationId,
        q.knowledgeBaseId,
        q.query,
        q.count,
        q.includeVectors ? 1 : 0,
        q.mode,
        JSON.stringify(q.entries),
        q.createdBy,
        q.createdAt.getTime(),
      );
    },
    getQuery: async (organizationId, id) =>
      queryOf(
        prepare("SELECT * FROM knowledge_base_queries WHERE id = ? AND organization_id = ?").get(id, organizationId),
      ),
    listQueries: async (organizationId, knowledgeBaseId, skip, limit) =>
      newestPage("knowledge_base_queries", queryOf, organizationId, knowledgeBaseId, skip, limit),
    async deleteQueriesOf(organizationId, knowledgeBaseId) {
      handle.transaction(() => {
        for (const table of ["knowledge_base_queries", "knowledge_base_searches"])
          prepare(`DELETE FROM ${table} WHERE organization_id = ? AND knowledge_base_id = ?`).run(
            organizationId,
            knowledgeBaseId,
          );
      });
    },
    async insertSearch(q) {
      prepare(
        `INSERT INTO knowledge_base_searches (id, organization_id, knowledge_base_id, query, result, model, entries,
           created_by, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        q.id,
        q.organizationId,
        q.knowledgeBaseId,
        q.query,
        q.result,
        q.model,
        JSON.stringify(q.entries),
        q.createdBy,
        q.createdAt.getTime(),
      );
    },
    getSearch: async (organizationId, id) =>
      searchOf(
        prepare("SELECT * FROM knowledge_base_searches WHERE id = ? AND organization_id = ?").get(id, organizationId),
      ),
    listSearches: async (organizationId, knowledgeBaseId, skip, limit) =>
      newestPage("knowledge_base_searches", searchOf, organizationId, knowledgeBaseId, skip, limit),
  };
}
