import { heldRows } from "@loom/store/held-rows";
import { dateOf, newestFirstOrder, type Row, type SqliteHandle, sqliteLifecycle } from "@loom/store/sqlite";
import type { AssistantRecord, AssistantsStore } from "./port.ts";
import { createSqliteRulesetStore, rulesetsMigration } from "./rulesets-sqlite.ts";

/** Schema versions of the assistants tables (kit `migrate`): append, never edit. */
const migrations = [
  `CREATE TABLE assistants_assistants (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, name TEXT NOT NULL, description TEXT NOT NULL, input TEXT,
     knowledge_base_ids TEXT NOT NULL, retriever_ids TEXT NOT NULL, ruleset_ids TEXT NOT NULL, structure_ids TEXT NOT NULL, tool_ids TEXT NOT NULL,
     created_by TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
   CREATE INDEX assistants_assistants_by_organization ON assistants_assistants (organization_id, created_at DESC, id DESC);`,
  rulesetsMigration,
];

const ids = (json: unknown): string[] => JSON.parse(json as string) as string[];
const json = (value: string[] | undefined): string | null => (value === undefined ? null : JSON.stringify(value));

const assistantOf = (row: Row | undefined): AssistantRecord | undefined =>
  row && {
    id: row.id as string,
    organizationId: row.organization_id as string,
    name: row.name as string,
    description: row.description as string,
    ...(row.input === null ? {} : { input: row.input as string }),
    knowledgeBaseIds: ids(row.knowledge_base_ids),
    retrieverIds: ids(row.retriever_ids),
    rulesetIds: ids(row.ruleset_ids),
    structureIds: ids(row.structure_ids),
    toolIds: ids(row.tool_ids),
    createdBy: row.created_by as string,
    createdAt: dateOf(row.created_at)!,
    updatedAt: dateOf(row.updated_at)!,
  };

/** A record no caller shares: its arrays and dates copied. */
const copyOf = (a: AssistantRecord): AssistantRecord => ({
  ...a,
  knowledgeBaseIds: [...a.knowledgeBaseIds],
  retrieverIds: [...a.retrieverIds],
  rulesetIds: [...a.rulesetIds],
  structureIds: [...a.structureIds],
  toolIds: [...a.toolIds],
  createdAt: new Date(a.createdAt.getTime()),
  updatedAt: new Date(a.updatedAt.getTime()),
});

/** Assistants held after a read, at most this many (all forgotten past it): a run's create reads its assistant. */
const heldLimit = 1_000;

/**
 * SQLite adapter (the embedded store): one row per assistant, its id arrays
 * as JSON text, times as epoch milliseconds. Assistants read are held in
 * memory, written through (the file is this process's alone), so every
 * run's create after the first reads no row and parses no JSON; forgotten
 * past `heldLimit`, and all of them when writes are undone.
 */
export function createSqliteAssistantsStore(handle: SqliteHandle): AssistantsStore {
  const { prepare } = handle;
  const held = heldRows<AssistantRecord>(handle, heldLimit);
  const hold = (assistant: AssistantRecord | undefined) => {
    if (!assistant) return undefined;
    held.hold(assistant.id, assistant);
    return copyOf(assistant);
  };
  return {
    ...sqliteLifecycle(handle, "assistants", migrations),
    ...createSqliteRulesetStore(handle),

    async insert(a) {
      prepare(
        `INSERT INTO assistants_assistants (id, organization_id, name, description, input, knowledge_base_ids, retriever_ids, ruleset_ids, structure_ids, tool_ids,
           created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        a.id,
        a.organizationId,
        a.name,
        a.description,
        a.input ?? null,
        json(a.knowledgeBaseIds),
        json(a.retrieverIds),
        json(a.rulesetIds),
        json(a.structureIds),
        json(a.toolIds),
        a.createdBy,
        a.createdAt.getTime(),
        a.updatedAt.getTime(),
      );
    },
    async get(organizationId, id) {
      const kept = held.get(id);
      if (kept) return kept.organizationId === organizationId ? copyOf(kept) : undefined;
      return hold(
        assistantOf(
          prepare("SELECT * FROM assistants_assistants WHERE id = ? AND organization_id = ?").get(id, organizationId),
        ),
      );
    },
    async update(organizationId, id, patch, at) {
      // One statement for every patch: a field the patch leaves out (NULL here) keeps its value.
      return hold(
        assistantOf(
          prepare(
            `UPDATE assistants_assistants SET name = coalesce(?, name), description = coalesce(?, description), input = coalesce(?, input),
             knowledge_base_ids = coalesce(?, knowledge_base_ids), ruleset_ids = coalesce(?, ruleset_ids), structure_ids = coalesce(?, structure_ids),
             tool_ids = coalesce(?, tool_ids), updated_at = ?
           WHERE id = ? AND organization_id = ? RETURNING *`,
          ).get(
            patch.name ?? null,
            patch.description ?? null,
            patch.input ?? null,
            json(patch.knowledgeBaseIds),
            json(patch.rulesetIds),
            json(patch.structureIds),
            json(patch.toolIds),
            at.getTime(),
            id,
            organizationId,
          ),
        ),
      );
    },
    async delete(organizationId, id) {
      const deleted =
        prepare("DELETE FROM assistants_assistants WHERE id = ? AND organization_id = ?").run(id, organizationId)
          .changes === 1;
      if (deleted) held.forget(id);
      return deleted;
    },
    async list(organizationId, skip, limit) {
      const totalCount = Number(
        prepare("SELECT count(*) AS n FROM assistants_assistants WHERE organization_id = ?").get(organizationId)!.n,
      );
      const items = prepare(
        `SELECT * FROM assistants_assistants WHERE organization_id = ? ORDER BY ${newestFirstOrder} LIMIT ? OFFSET ?`,
      ).all(organizationId, limit, skip);
      return { items: items.map((row) => assistantOf(row)!), totalCount };
    },
    namingRuleset: async (organizationId, rulesetId, limit) =>
      prepare(
        `SELECT id FROM assistants_assistants
         WHERE organization_id = ? AND EXISTS (SELECT 1 FROM json_each(ruleset_ids) WHERE value = ?) ORDER BY ${newestFirstOrder} LIMIT ?`,
      )
        .all(organizationId, rulesetId, limit)
        .map((row) => row.id as string),
  };
}
