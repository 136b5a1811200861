import { dateOf, newestFirstOrder, type Row, type SqliteHandle, sqliteLifecycle } from "@loom/store/sqlite";
import { createSqliteDataConnectorStore, dataConnectorsMigration } from "./data-connectors-sqlite.ts";
import { createSqliteJobStore, jobsMigration } from "./jobs-sqlite.ts";
import type { KnowledgeBaseRecord, KnowledgeBasesStore } from "./port.ts";
import { createSqliteQueryStore, queriesMigration } from "./queries-sqlite.ts";

/** Schema versions of the knowledge tables (kit `migrate`): append, never edit. */
const migrations = [
  `CREATE TABLE knowledge_bases (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, name TEXT NOT NULL,
     description TEXT NOT NULL, embedding_model TEXT NOT NULL, asset_paths TEXT NOT NULL, data_connector_ids TEXT NOT NULL,
     created_by TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
   CREATE INDEX knowledge_bases_by_organization ON knowledge_bases (organization_id, created_at DESC, id DESC);`,
  dataConnectorsMigration,
  jobsMigration,
  queriesMigration,
];

const knowledgeBaseOf = (row: Row | undefined): KnowledgeBaseRecord | undefined =>
  row && {
    id: row.id as string,
    organizationId: row.organization_id as string,
    name: row.name as string,
    description: row.description as string,
    embeddingModel: row.embedding_model as string,
    assetPaths: JSON.parse(row.asset_paths as string) as string[],
    dataConnectorIds: JSON.parse(row.data_connector_ids as string) as string[],
    createdBy: row.created_by as string,
    createdAt: dateOf(row.created_at)!,
    updatedAt: dateOf(row.updated_at)!,
  };

/**
 * SQLite adapter (the embedded store), with the connectors part: one row per knowledge base, its asset paths and
 * connector ids as JSON text, times as epoch milliseconds.
 */
export function createSqliteKnowledgeBasesStore(handle: SqliteHandle): KnowledgeBasesStore {
  const { prepare } = handle;
  return {
    ...sqliteLifecycle(handle, "knowledge", migrations),
    ...createSqliteDataConnectorStore(handle),
    ...createSqliteJobStore(handle),
    ...createSqliteQueryStore(handle),

    async insert(kb) {
      prepare(
        `INSERT INTO knowledge_bases (id, organization_id, name, description, embedding_model, asset_paths, data_connector_ids,
           created_by, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        kb.id,
        kb.organizationId,
        kb.name,
        kb.description,
        kb.embeddingModel,
        JSON.stringify(kb.assetPaths),
        JSON.stringify(kb.dataConnectorIds),
        kb.createdBy,
        kb.createdAt.getTime(),
        kb.updatedAt.getTime(),
      );
    },
    get: async (organizationId, id) =>
      knowledgeBaseOf(
        prepare("SELECT * FROM knowledge_bases WHERE id = ? AND organization_id = ?").get(id, organizationId),
      ),
    // One statement for every patch: a field the patch leaves out (NULL here) keeps its value.
    update: async (organizationId, id, patch, at) =>
      knowledgeBaseOf(
        prepare(
          `UPDATE knowledge_bases SET name = coalesce(?, name), description = coalesce(?, description),
             embedding_model = coalesce(?, embedding_model), asset_paths = coalesce(?, asset_paths),
             data_connector_ids = coalesce(?, data_connector_ids), updated_at = ?
           WHERE id = ? AND organization_id = ? RETURNING *`,
        ).get(
          patch.name ?? null,
          patch.description ?? null,
          patch.embeddingModel ?? null,
          patch.assetPaths ? JSON.stringify(patch.assetPaths) : null,
          patch.dataConnectorIds ? JSON.stringify(patch.dataConnectorIds) : null,
          at.getTime(),
          id,
          organizationId,
        ),
      ),
    delete: async (organizationId, id) =>
      prepare("DELETE FROM knowledge_bases WHERE id = ? AND organization_id = ?").run(id, organizationId).changes === 1,
    // By primary key (`id IN json_each(?)`), the organization checked after, as rulesets are read.
    getMany: async (organizationId, ids) =>
      prepare("SELECT * FROM knowledge_bases WHERE id IN (SELECT value FROM json_each(?)) AND organization_id = ?")
        .all(JSON.stringify(ids), organizationId)
        .map((row) => knowledgeBaseOf(row)!),
    async list(organizationId, skip, limit) {
      const totalCount = Number(
        prepare("SELECT count(*) AS n FROM knowledge_bases WHERE organization_id = ?").get(organizationId)!.n,
      );
      const rows = prepare(
        `SELECT * FROM knowledge_bases WHERE organization_id = ? ORDER BY ${newestFirstOrder} LIMIT ? OFFSET ?`,
      ).all(organizationId, limit, skip);
      return { items: rows.map((row) => knowledgeBaseOf(row)!), totalCount };
    },
  };
}
