import type { JsonObject } from "@bufbuild/protobuf";
import { dateOf, newestFirstOrder, type Row, type SqliteHandle } from "@loom/store/sqlite";
import { heldById } from "./held-by-id.ts";
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

const copyOfRuleset = (r: RulesetRecord): RulesetRecord => ({
  ...r,
  ruleIds: [...r.ruleIds],
  createdAt: new Date(r.createdAt.getTime()),
  updatedAt: new Date(r.updatedAt.getTime()),
});
const copyOfRule = (r: RuleRecord): RuleRecord => ({
  ...r,
  createdAt: new Date(r.createdAt.getTime()),
  updatedAt: new Date(r.updatedAt.getTime()),
});

/**
 * By primary key, then the organization: `+` keeps SQLite from choosing the
 * organization's index, which would read every record of the organization.
 */
const byIds = (table: string) =>
  `SELECT * FROM ${table} WHERE id IN (SELECT value FROM json_each(?)) AND +organization_id = ?`;

/**
 * SQLite adapter of the rulesets part of the assistants store: one row per
 * ruleset (its rule ids and metadata as JSON text) and per rule (its rule and
 * metadata as JSON text). Its tables are created by the assistants store's
 * migrations. Rulesets and rules read are held in memory, written through
 * (`heldById`), so a run's create, which reads its rulesets and their rules,
 * reads no row and parses no JSON after the first.
 */
export function createSqliteRulesetStore(handle: SqliteHandle): RulesetStore {
  const { prepare } = handle;
  const rulesets = heldById<RulesetRecord>(handle, {
    copy: copyOfRuleset,
    select: (organizationId, ids) =>
      prepare(byIds("assistants_rulesets"))
        .all(JSON.stringify(ids), organizationId)
        .map((row) => rulesetOf(row)!),
    json: (r) => [r.metadata],
  });
  const rules = heldById<RuleRecord>(handle, {
    copy: copyOfRule,
    select: (organizationId, ids) =>
      prepare(byIds("assistants_rules"))
        .all(JSON.stringify(ids), organizationId)
        .map((row) => ruleOf(row)!),
    json: (r) => [r.metadata, r.rule],
  });
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
    getRuleset: async (organizationId, id) => rulesets.get(organizationId, [id])[0],
    getRulesets: async (organizationId, ids) => rulesets.get(organizationId, ids),
    updateRuleset: async (organizationId, id, patch, at) =>
      // One statement for every patch: a field the patch leaves out (NULL here) keeps its value.
      rulesets.hold(
        rulesetOf(
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
        ),
      ),
    async dropRuleIds(organizationId, id, ruleIds, at) {
      const [ruleset] = rulesets.get(organizationId, [id]);
      if (!ruleset) return undefined;
      const kept = ruleset.ruleIds.filter((ruleId) => !ruleIds.includes(ruleId));
      if (kept.length === ruleset.ruleIds.length) return ruleset;
      setRuleIds(id, kept, at);
      return rulesets.hold({ ...ruleset, ruleIds: kept, updatedAt: at });
    },
    async deleteRuleset(organizationId, id) {
      const deleted =
        prepare("DELETE FROM assistants_rulesets WHERE id = ? AND organization_id = ?").run(id, organizationId)
          .changes === 1;
      if (deleted) rulesets.forget(id);
      return deleted;
    },
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
    getRule: async (organizationId, id) => rules.get(organizationId, [id])[0],
    getRules: async (organizationId, ids) => rules.get(organizationId, ids),
    updateRule: async (organizationId, id, patch, at) =>
      rules.hold(
        ruleOf(
          prepare(
            `UPDATE assistants_rules SET name = coalesce(?, name), rule = coalesce(?, rule), metadata = coalesce(?, metadata), updated_at = ?
             WHERE id = ? AND organization_id = ? RETURNING *`,
          ).get(patch.name ?? null, jsonText(patch.rule), jsonText(patch.metadata), at.getTime(), id, organizationId),
        ),
      ),
    deleteRule: async (organizationId, id, at) =>
      // The rule and its place in every ruleset go together: one transaction.
      handle.transaction(() => {
        const deleted =
          prepare("DELETE FROM assistants_rules WHERE id = ? AND organization_id = ?").run(id, organizationId)
            .changes === 1;
        if (!deleted) return false;
        rules.forget(id);
        const listing = prepare(
          `SELECT id, rule_ids FROM assistants_rulesets
           WHERE organization_id = ? AND EXISTS (SELECT 1 FROM json_each(rule_ids) WHERE value = ?)`,
        ).all(organizationId, id);
        for (const row of listing) {
          setRuleIds(
            row.id as string,
            parsed<string[]>(row.rule_ids).filter((ruleId) => ruleId !== id),
            at,
          );
          rulesets.forget(row.id as string);
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
