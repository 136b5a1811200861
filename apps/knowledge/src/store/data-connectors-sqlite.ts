import { dateOf, newestFirstOrder, type Row, type SqliteHandle } from "@loom/store/sqlite";
import type { DataConnectorRecord, DataConnectorStore } from "./data-connectors.ts";

/** The connectors table: a schema version of the knowledge tables (sqlite.ts). */
export const dataConnectorsMigration = `CREATE TABLE knowledge_data_connectors (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL,
     name TEXT NOT NULL, description TEXT NOT NULL, bucket_id TEXT NOT NULL, asset_paths TEXT NOT NULL,
     created_by TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
   CREATE INDEX knowledge_data_connectors_by_organization
     ON knowledge_data_connectors (organization_id, created_at DESC, id DESC);`;

const connectorOf = (row: Row | undefined): DataConnectorRecord | undefined =>
  row && {
    id: row.id as string,
    organizationId: row.organization_id as string,
    name: row.name as string,
    description: row.description as string,
    bucketId: row.bucket_id as string,
    assetPaths: JSON.parse(row.asset_paths as string) as string[],
    createdBy: row.created_by as string,
    createdAt: dateOf(row.created_at)!,
    updatedAt: dateOf(row.updated_at)!,
  };

/** SQLite adapter of the connectors part: one row per connector, its paths as JSON text. */
export function createSqliteDataConnectorStore(handle: SqliteHandle): DataConnectorStore {
  const { prepare } = handle;
  return {
    async insertDataConnector(c) {
      prepare(
        `INSERT INTO knowledge_data_connectors (id, organization_id, name, description, bucket_id, asset_paths, created_by, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        c.id,
        c.organizationId,
        c.name,
        c.description,
        c.bucketId,
        JSON.stringify(c.assetPaths),
        c.createdBy,
        c.createdAt.getTime(),
        c.updatedAt.getTime(),
      );
    },
    getDataConnector: async (organizationId, id) =>
      connectorOf(
        prepare("SELECT * FROM knowledge_data_connectors WHERE id = ? AND organization_id = ?").get(id, organizationId),
      ),
    // One statement for every patch: a field the patch leaves out (NULL here) keeps its value.
    updateDataConnector: async (organizationId, id, patch, at) =>
      connectorOf(
        prepare(
          `UPDATE knowledge_data_connectors SET name = coalesce(?, name), description = coalesce(?, description),
             bucket_id = coalesce(?, bucket_id), asset_paths = coalesce(?, asset_paths), updated_at = ?
           WHERE id = ? AND organization_id = ? RETURNING *`,
        ).get(
          patch.name ?? null,
          patch.description ?? null,
          patch.bucketId ?? null,
          patch.assetPaths ? JSON.stringify(patch.assetPaths) : null,
          at.getTime(),
          id,
          organizationId,
        ),
      ),
    deleteDataConnector: async (organizationId, id, at) =>
      // The connector and its place in every knowledge base go together: one transaction.
      handle.transaction(() => {
        const deleted =
          prepare("DELETE FROM knowledge_data_connectors WHERE id = ? AND organization_id = ?").run(id, organizationId)
            .changes === 1;
        if (!deleted) return false;
        prepare(
          `UPDATE knowledge_bases
             SET data_connector_ids = (SELECT json_group_array(value) FROM json_each(knowledge_bases.data_connector_ids) WHERE value <> ?),
                 updated_at = ?
           WHERE organization_id = ? AND EXISTS (SELECT 1 FROM json_each(data_connector_ids) WHERE value = ?)`,
        ).run(id, at.getTime(), organizationId, id);
        return true;
      }),
    async listDataConnectors(organizationId, skip, limit) {
      const totalCount = Number(
        prepare("SELECT count(*) AS n FROM knowledge_data_connectors WHERE organization_id = ?").get(organizationId)!.n,
      );
      const rows = prepare(
        `SELECT * FROM knowledge_data_connectors WHERE organization_id = ? ORDER BY ${newestFirstOrder} LIMIT ? OFFSET ?`,
      ).all(organizationId, limit, skip);
      return { items: rows.map((row) => connectorOf(row)!), totalCount };
    },
    existingDataConnectorIds: async (organizationId, ids) =>
      new Set(
        prepare(
          "SELECT id FROM knowledge_data_connectors WHERE id IN (SELECT value FROM json_each(?)) AND organization_id = ?",
        )
          .all(JSON.stringify(ids), organizationId)
          .map((row) => row.id as string),
      ),
  };
}
