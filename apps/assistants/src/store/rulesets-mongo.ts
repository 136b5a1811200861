import type { JsonObject } from "@bufbuild/protobuf";
import { type Doc, fromDoc, newestFirstSort, toDoc } from "@loom/store/mongo";
import type { Collection, Db } from "mongodb";
import type { RulePatch, RuleRecord, RulesetPatch, RulesetRecord, RulesetStore } from "./rulesets.ts";

/**
 * A ruleset and a rule as stored. The caller's JSON (metadata, a JSON-schema
 * rule) is kept as JSON text: it is never queried, and a JSON object's keys
 * may be anything ("$ref", "a.b", "") while document field names may not.
 */
type RulesetDoc = Omit<Doc<RulesetRecord>, "metadata"> & { metadata: string };
type RuleDoc = Omit<Doc<RuleRecord>, "metadata" | "rule"> & { metadata: string; rule: string };

const text = (value: unknown): string | undefined => (value === undefined ? undefined : JSON.stringify(value));

const toRulesetDoc = (r: RulesetRecord): RulesetDoc => ({ ...toDoc(r), metadata: JSON.stringify(r.metadata) });
const rulesetOf = (d: RulesetDoc | null): RulesetRecord | undefined =>
  d
    ? { ...fromDoc<Omit<RulesetRecord, "metadata"> & { metadata: string }>(d)!, metadata: JSON.parse(d.metadata) }
    : undefined;
const rulesetChanges = ({ metadata, ...rest }: RulesetPatch) => ({ ...rest, metadata: text(metadata) });

const toRuleDoc = (r: RuleRecord): RuleDoc => ({
  ...toDoc(r),
  rule: JSON.stringify(r.rule),
  metadata: JSON.stringify(r.metadata),
});
const ruleOf = (d: RuleDoc | null): RuleRecord | undefined =>
  d
    ? {
        ...fromDoc<Omit<RuleRecord, "metadata" | "rule"> & { metadata: string; rule: string }>(d)!,
        rule: JSON.parse(d.rule) as string | JsonObject,
        metadata: JSON.parse(d.metadata) as JsonObject,
      }
    : undefined;
const ruleChanges = ({ metadata, rule, ...rest }: RulePatch) => ({
  ...rest,
  metadata: text(metadata),
  rule: text(rule),
});

/**
 * MongoDB adapter of the rulesets part of the assistants store: two
 * collections, scoped by organizationId in every query. MongoDB (FerretDB)
 * gives no transaction across documents: deleting a rule deletes it first,
 * then pulls its id from the rulesets that list it (docs/decisions.md,
 * "Rulesets and rules").
 */
export function createMongoRulesetStore(db: Db): RulesetStore & { init(): Promise<void> } {
  const rulesets: Collection<RulesetDoc> = db.collection("rulesets");
  const rules: Collection<RuleDoc> = db.collection("rules");
  return {
    async init() {
      await rulesets.createIndex({ organizationId: 1, createdAt: -1, _id: -1 });
      await rulesets.createIndex({ organizationId: 1, alias: 1, createdAt: -1, _id: -1 });
      await rulesets.createIndex({ organizationId: 1, ruleIds: 1 });
      await rules.createIndex({ organizationId: 1, createdAt: -1, _id: -1 });
    },

    async insertRuleset(ruleset) {
      await rulesets.insertOne(toRulesetDoc(ruleset));
    },
    getRuleset: async (organizationId, id) => rulesetOf(await rulesets.findOne({ _id: id, organizationId })),
    getRulesets: async (organizationId, ids) =>
      (await rulesets.find({ _id: { $in: [...ids] }, organizationId }).toArray()).map((d) => rulesetOf(d)!),
    updateRuleset: async (organizationId, id, patch, at) =>
      rulesetOf(
        await rulesets.findOneAndUpdate(
          { _id: id, organizationId },
          { $set: { ...rulesetChanges(patch), updatedAt: at } },
          { returnDocument: "after" },
        ),
      ),
    async dropRuleIds(organizationId, id, ruleIds, at) {
      const filter = { _id: id, organizationId };
      const dropped = await rulesets.findOneAndUpdate(
        { ...filter, ruleIds: { $in: [...ruleIds] } },
        { $pullAll: { ruleIds: [...ruleIds] }, $set: { updatedAt: at } },
        { returnDocument: "after" },
      );
      return rulesetOf(dropped ?? (await rulesets.findOne(filter)));
    },
    deleteRuleset: async (organizationId, id) =>
      (await rulesets.deleteOne({ _id: id, organizationId })).deletedCount === 1,
    async listRulesets(organizationId, alias, skip, limit) {
      const query = { organizationId, ...(alias !== undefined ? { alias } : {}) };
      const [docs, totalCount] = await Promise.all([
        rulesets.find(query).sort(newestFirstSort).skip(skip).limit(limit).toArray(),
        rulesets.countDocuments(query),
      ]);
      return { items: docs.map((d) => rulesetOf(d)!), totalCount };
    },

    async insertRule(rule) {
      await rules.insertOne(toRuleDoc(rule));
    },
    getRule: async (organizationId, id) => ruleOf(await rules.findOne({ _id: id, organizationId })),
    getRules: async (organizationId, ids) =>
      (await rules.find({ _id: { $in: [...ids] }, organizationId }).toArray()).map((d) => ruleOf(d)!),
    updateRule: async (organizationId, id, patch, at) =>
      ruleOf(
        await rules.findOneAndUpdate(
          { _id: id, organizationId },
          { $set: { ...ruleChanges(patch), updatedAt: at } },
          { returnDocument: "after" },
        ),
      ),
    async deleteRule(organizationId, id, at) {
      if ((await rules.deleteOne({ _id: id, organizationId })).deletedCount !== 1) return false;
      await rulesets.updateMany({ organizationId, ruleIds: id }, { $pull: { ruleIds: id }, $set: { updatedAt: at } });
      return true;
    },
    async listRules(organizationId, skip, limit) {
      const [docs, totalCount] = await Promise.all([
        rules.find({ organizationId }).sort(newestFirstSort).skip(skip).limit(limit).toArray(),
        rules.countDocuments({ organizationId }),
      ]);
      return { items: docs.map((d) => ruleOf(d)!), totalCount };
    },
  };
}
