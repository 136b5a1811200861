import type { JsonObject } from "@bufbuild/protobuf";
import { dateOf, newestFirstOrder, type Row, type SqliteHandle } from "@loom/store/sqlite";
import type { RuleRecord, RulesetRecord, RulesetStore } from "./rulesets.ts";

/** The rulesets and rules tables: a schema version of the assistants tables (appended in sqlite.ts). */
export const rulesetsMigration = `
  CREATE TABLE assistants_rulesets (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, name TEXT NOT NULL, alias TEXT, description TEXT NOT NULL,
    metadata TEXT NOT NULL, rule_ids TEXT NOT NULL, created_by TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
  CREATE INDEX assistants_rulesets_by_organization ON assistants_rulesets (organization_id, created_at DESC, id DESC);
  CREATE INDEX assistants_rulesets_by_alias ON assistants_rulesets (organization_id, alias, created_at DESC, id DESC) WHERE alias IS NOT NULL;
  CREATE TABLE assistants_rules (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, name TEXT NOT NULL, rule TEXT NOT NULL, metadata TEXT NOT NULL,
    created_by TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
  CREATE INDEX assistants_rules_by_organization ON assistants_rules (organization_id, created_at DESC, id DESC);`;

/** JSON text of a value, or NULL for an absent one (an update's `coalesce` keeps the column then). */
const jsonText = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value));
const parsed = <T>(text: unknown): T => JSON.parse(text as string) as T;

const rulesetOf = (row: Row | undefined): RulesetRecord | undefined =>
  row && {
    id: row.id as string,
    organizationId: row.organization_id as string,
    name: row.name as string,
    ...(row.alias === null ? {} : { alias: row.alias as string }),
    description: row.description as string,
    metadata: parsed<JsonObject>(row.metadata),
    ruleIds: parsed<string[]>(row.rule_ids),
    createdBy: row.created_by as string,
    createdAt: dateOf(row.created_at)!,
    updatedAt: dateOf(row.updated_at)!,
  };

const ruleOf = (row: Row | undefined): RuleRecord | undefined =>
  row && {
    id: row.id as string,
    organizationId: row.organization_id as string,
    name: row.name as string,
    rule: parsed<string | JsonObject>(row.rule),
    metadata: parsed<JsonObject>(row.metadata),
    createdBy: row.created_by as string,
    createdAt: dateOf(row.created_at)!,
    updatedAt: dateOf(row.updated_at)!,
  };

/**
 * SQLite adapter of the rulesets part of the assistants store: one row per
 * ruleset (its rule ids and metadata as JSON text) and per rule (its rule and
 * metadata as JSON text). Its tables are created by the assistants store's
 * migrations.
 */
export function createSqliteRulesetStore(handle: SqliteHandle): RulesetStore {
  const { prepare } = handle;
  const setRuleIds = (id: string, ruleIds: string[], at: Date) =>
    prepare("UPDATE assistants_rulesets SET rule_ids = ?, updated_at = ? WHERE id = ?").run(
      JSON.stringify(ruleIds),
      at.getTime(),
      id,
    );
  return {
    async insertRuleset(r) {
      prepare(
        `INSERT INTO assistants_rulesets (id, organization_id, name, alias, description, metadata, rule_ids, created_by, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        r.id,
        r.organizationId,
        r.name,
        r.alias ?? null,
        r.description,
        JSON.stringify(r.metadata),
        JSON.stringify(r.ruleIds),
        r.createdBy,
        r.createdAt.getTime(),
        r.updatedAt.getTime(),
      );
    },
    getRuleset: async (organizationId, id) =>
      rulesetOf(
        prepare("SELECT * FROM assistants_rulesets WHERE id = ? AND organization_id = ?").get(id, organizationId),
      ),
    getRulesets: async (organizationId, ids) =>
      prepare("SELECT * FROM assistants_rulesets WHERE organization_id = ? AND id IN (SELECT value FROM json_each(?))")
        .all(organizationId, JSON.stringify(ids))
        .map((row) => rulesetOf(row)!),
    async updateRuleset(organizationId, id, patch, at) {
      // One statement for every patch: a field the patch leaves out (NULL here) keeps its value.
      return rulesetOf(
        prepare(
          `UPDATE assistants_rulesets SET name = coalesce(?, name), alias = coalesce(?, alias), description = coalesce(?, description),
             metadata = coalesce(?, metadata), rule_ids = coalesce(?, rule_ids), updated_at = ?
           WHERE id = ? AND organization_id = ? RETURNING *`,
        ).get(
          patch.name ?? null,
          patch.alias ?? null,
          patch.description ?? null,
          jsonText(patch.metadata),
          jsonText(patch.ruleIds),
          at.getTime(),
          id,
          organizationId,
        ),
      );
    },
    async dropRuleIds(organizationId, id, ruleIds, at) {
      const ruleset = rulesetOf(
        prepare("SELECT * FROM assistants_rulesets WHERE id = ? AND organization_id = ?").get(id, organizationId),
      );
      if (!ruleset) return undefined;
      const kept = ruleset.ruleIds.filter((ruleId) => !ruleIds.includes(ruleId));
      if (kept.length === ruleset.ruleIds.length) return ruleset;
      setRuleIds(id, kept, at);
      return { ...ruleset, ruleIds: kept, updatedAt: at };
    },
    deleteRuleset: async (organizationId, id) =>
      prepare("DELETE FROM assistants_rulesets WHERE id = ? AND organization_id = ?").run(id, organizationId)
        .changes === 1,
    async listRulesets(organizationId, alias, skip, limit) {
      const [where, params] =
        alias === undefined
          ? ["organization_id = ?", [organizationId]]
          : ["organization_id = ? AND alias = ?", [organizationId, alias]];
      const totalCount = Number(
        prepare(`SELECT count(*) AS n FROM assistants_rulesets WHERE ${where}`).get(...params)!.n,
      );
      const rows = prepare(
        `SELECT * FROM assistants_rulesets WHERE ${where} ORDER BY ${newestFirstOrder} LIMIT ? OFFSET ?`,
      ).all(...params, limit, skip);
      return { items: rows.map((row) => rulesetOf(row)!), totalCount };
    },

    async insertRule(r) {
      prepare(
        `INSERT INTO assistants_rules (id, organization_id, name, rule, metadata, created_by, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        r.id,
        r.organizationId,
        r.name,
        JSON.stringify(r.rule),
        JSON.stringify(r.metadata),
        r.createdBy,
        r.createdAt.getTime(),
        r.updatedAt.getTime(),
      );
    },
    getRule: async (organizationId, id) =>
      ruleOf(prepare("SELECT * FROM assistants_rules WHERE id = ? AND organization_id = ?").get(id, organizationId)),
    getRules: async (organizationId, ids) =>
      prepare("SELECT * FROM assistants_rules WHERE organization_id = ? AND id IN (SELECT value FROM json_each(?))")
        .all(organizationId, JSON.stringify(ids))
        .map((row) => ruleOf(row)!),
    updateRule: async (organizationId, id, patch, at) =>
      ruleOf(
        prepare(
          `UPDATE assistants_rules SET name = coalesce(?, name), rule = coalesce(?, rule), metadata = coalesce(?, metadata), updated_at = ?
           WHERE id = ? AND organization_id = ? RETURNING *`,
        ).get(patch.name ?? null, jsonText(patch.rule), jsonText(patch.metadata), at.getTime(), id, organizationId),
      ),
    deleteRule: async (organizationId, id, at) =>
      // The rule and its place in every ruleset go together: one transaction.
      handle.transaction(() => {
        const deleted =
          prepare("DELETE FROM assistants_rules WHERE id = ? AND organization_id = ?").run(id, organizationId)
            .changes === 1;
        if (!deleted) return false;
        const listing = prepare(
          `SELECT id, rule_ids FROM assistants_rulesets
           WHERE organization_id = ? AND EXISTS (SELECT 1 FROM json_each(rule_ids) WHERE value = ?)`,
        ).all(organizationId, id);
        for (const row of listing) {
          const ruleIds = parsed<string[]>(row.rule_ids).filter((ruleId) => ruleId !== id);
          setRuleIds(row.id as string, ruleIds, at);
        }
        return true;
      }),
    async listRules(organizationId, skip, limit) {
      const totalCount = Number(
        prepare("SELECT count(*) AS n FROM assistants_rules WHERE organization_id = ?").get(organizationId)!.n,
      );
      const rows = prepare(
        `SELECT * FROM assistants_rules WHERE organization_id = ? ORDER BY ${newestFirstOrder} LIMIT ? OFFSET ?`,
      ).all(organizationId, limit, skip);
      return { items: rows.map((row) => ruleOf(row)!), totalCount };
    },
  };
}
