import { newId } from "@loom/contracts/ids";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AssistantsStore } from "../src/store/port.ts";
import type { RuleRecord, RulesetRecord } from "../src/store/rulesets.ts";
import { openAssistantsStore } from "../src/wiring.ts";

describe.each(storeKinds("rulesets store contract"))("rulesets store contract (%s)", (kind) => {
  let store: AssistantsStore;
  const db = freshDatabaseName();
  const org = newId();
  const otherOrg = newId();
  const at = new Date("2026-03-04T05:06:07.089Z");
  const later = new Date(at.getTime() + 5000);

  beforeAll(async () => {
    store = await openAssistantsStore({ url: kind === "mongo" ? testServers.mongoUrl : undefined, db });
    await store.init();
    await store.init();
  });
  afterAll(async () => {
    await store.close();
    if (kind === "mongo") await dropDatabase(testServers.mongoUrl!, db);
  });

  const rule = (over: Partial<RuleRecord> = {}): RuleRecord => ({
    id: newId(),
    organizationId: org,
    name: "r",
    rule: "Be brief.",
    metadata: {},
    createdBy: "u",
    createdAt: at,
    updatedAt: at,
    ...over,
  });
  const ruleset = (over: Partial<RulesetRecord> = {}): RulesetRecord => ({
    id: newId(),
    organizationId: org,
    name: "s",
    description: "",
    metadata: {},
    ruleIds: [],
    createdBy: "u",
    createdAt: at,
    updatedAt: at,
    ...over,
  });

  it("round-trips rules, string and JSON object, with any metadata keys, only within their organization", async () => {
    const text = rule({ metadata: { $set: 1, "a.b": [true, null], "": { nested: "x" } } });
    const schema = rule({ rule: { type: "object", properties: { $ref: { "a.b": 1 } }, required: ["answer"] } });
    await store.insertRule(text);
    await store.insertRule(schema);
    expect(await store.getRule(org, text.id)).toEqual(text);
    expect(await store.getRule(org, schema.id)).toEqual(schema);
    expect(await store.getRule(otherOrg, text.id)).toBeUndefined();
    const many = await store.getRules(org, [schema.id, newId(), text.id]);
    expect(many.map((r) => r.id).sort()).toEqual([text.id, schema.id].sort());
    expect(await store.getRules(otherOrg, [text.id])).toEqual([]);
  });

  it("round-trips rulesets with and without alias, only within their organization", async () => {
    const r = rule();
    await store.insertRule(r);
    const named = ruleset({ alias: "house", metadata: { k: "v" }, ruleIds: [r.id], description: "d" });
    const plain = ruleset();
    await store.insertRuleset(named);
    await store.insertRuleset(plain);
    expect(await store.getRuleset(org, named.id)).toEqual(named);
    expect(await store.getRuleset(org, plain.id)).toEqual(plain);
    expect(await store.getRuleset(otherOrg, named.id)).toBeUndefined();
    expect((await store.getRulesets(org, [plain.id, newId(), named.id])).map((s) => s.id).sort()).toEqual(
      [named.id, plain.id].sort(),
    );
    expect(await store.getRulesets(otherOrg, [named.id])).toEqual([]);
  });

  it("updates only the given fields, only within the organization", async () => {
    const s = ruleset({ alias: "kept", metadata: { a: 1 } });
    await store.insertRuleset(s);
    expect(await store.updateRuleset(otherOrg, s.id, { name: "hijacked" }, later)).toBeUndefined();
    const ids = [newId(), newId()];
    const updated = await store.updateRuleset(org, s.id, { name: "after", ruleIds: ids, metadata: {} }, later);
    expect(updated).toEqual({ ...s, name: "after", ruleIds: ids, metadata: {}, updatedAt: later });
    expect(await store.getRuleset(org, s.id)).toEqual(updated);
    expect(await store.updateRuleset(org, newId(), { name: "x" }, later)).toBeUndefined();

    const r = rule();
    await store.insertRule(r);
    expect(await store.updateRule(otherOrg, r.id, { name: "hijacked" }, later)).toBeUndefined();
    const changed = await store.updateRule(org, r.id, { rule: { type: "string" } }, later);
    expect(changed).toEqual({ ...r, rule: { type: "string" }, updatedAt: later });
    expect(await store.getRule(org, r.id)).toEqual(changed);
  });

  it("drops given rule ids from one ruleset, keeping the order of the rest", async () => {
    const [a, b, c] = [newId(), newId(), newId()];
    const s = ruleset({ ruleIds: [a, b, c] });
    await store.insertRuleset(s);
    expect(await store.dropRuleIds(org, s.id, [newId()], later)).toEqual(s);
    expect(await store.dropRuleIds(org, s.id, [b], later)).toEqual({ ...s, ruleIds: [a, c], updatedAt: later });
    expect(await store.dropRuleIds(otherOrg, s.id, [a], later)).toBeUndefined();
    expect((await store.getRuleset(org, s.id))?.ruleIds).toEqual([a, c]);
  });

  it("deleting a rule removes it from every ruleset of its organization that lists it", async () => {
    const [kept, doomed] = [rule(), rule()];
    await store.insertRule(kept);
    await store.insertRule(doomed);
    const first = ruleset({ ruleIds: [doomed.id, kept.id] });
    const second = ruleset({ ruleIds: [doomed.id] });
    const untouched = ruleset({ ruleIds: [kept.id] });
    for (const s of [first, second, untouched]) await store.insertRuleset(s);
    expect(await store.deleteRule(otherOrg, doomed.id, later)).toBe(false);
    expect(await store.deleteRule(org, doomed.id, later)).toBe(true);
    expect(await store.deleteRule(org, doomed.id, later)).toBe(false);
    expect(await store.getRule(org, doomed.id)).toBeUndefined();
    expect(await store.getRuleset(org, first.id)).toEqual({ ...first, ruleIds: [kept.id], updatedAt: later });
    expect(await store.getRuleset(org, second.id)).toEqual({ ...second, ruleIds: [], updatedAt: later });
    expect(await store.getRuleset(org, untouched.id)).toEqual(untouched);
  });

  it("deletes rulesets only within their organization", async () => {
    const s = ruleset();
    await store.insertRuleset(s);
    expect(await store.deleteRuleset(otherOrg, s.id)).toBe(false);
    expect(await store.deleteRuleset(org, s.id)).toBe(true);
    expect(await store.deleteRuleset(org, s.id)).toBe(false);
    expect(await store.getRuleset(org, s.id)).toBeUndefined();
  });

  it("lists rulesets newest first, ties by id, optionally by alias, and rules newest first, with totals", async () => {
    const listOrg = newId();
    const same = new Date("2026-06-01T00:00:01.000Z");
    const made = [
      ruleset({ organizationId: listOrg, alias: "x", createdAt: new Date("2026-06-01T00:00:00.000Z") }),
      ruleset({ organizationId: listOrg, alias: "x", createdAt: same }),
      ruleset({ organizationId: listOrg, createdAt: same }),
    ];
    for (const s of made) await store.insertRuleset(s);
    const expected = [made[1]!, made[2]!].sort((a, b) => (a.id < b.id ? 1 : -1)).concat(made[0]!);
    const first = await store.listRulesets(listOrg, undefined, 0, 2);
    const second = await store.listRulesets(listOrg, undefined, 2, 2);
    expect(first.totalCount).toBe(3);
    expect([...first.items, ...second.items].map((s) => s.id)).toEqual(expected.map((s) => s.id));
    const aliased = await store.listRulesets(listOrg, "x", 0, 10);
    expect(aliased).toEqual({ items: [made[1], made[0]], totalCount: 2 });
    expect(await store.listRulesets(listOrg, "none", 0, 10)).toEqual({ items: [], totalCount: 0 });

    const rules = [
      rule({ organizationId: listOrg, createdAt: new Date("2026-06-01T00:00:00.000Z") }),
      rule({ organizationId: listOrg, createdAt: same }),
    ];
    for (const r of rules) await store.insertRule(r);
    expect(await store.listRules(listOrg, 0, 10)).toEqual({ items: [rules[1], rules[0]], totalCount: 2 });
    expect(await store.listRules(listOrg, 1, 10)).toEqual({ items: [rules[0]], totalCount: 2 });
    expect((await store.listRules(newId(), 0, 10)).totalCount).toBe(0);
  });

  it("finds the organization's assistants that name a ruleset, at most as many as asked", async () => {
    const rulesetId = newId();
    const assistant = (organizationId: string, rulesetIds: string[]) => ({
      id: newId(),
      organizationId,
      name: "a",
      description: "",
      knowledgeBaseIds: [],
      retrieverIds: [],
      rulesetIds,
      structureIds: [],
      toolIds: [],
      createdBy: "u",
      createdAt: at,
      updatedAt: at,
    });
    const naming = [assistant(org, [newId(), rulesetId]), assistant(org, [rulesetId])];
    for (const a of [...naming, assistant(org, [newId()]), assistant(otherOrg, [rulesetId])]) await store.insert(a);
    expect((await store.namingRuleset(org, rulesetId, 10)).sort()).toEqual(naming.map((a) => a.id).sort());
    expect(await store.namingRuleset(org, rulesetId, 1)).toHaveLength(1);
    expect(await store.namingRuleset(org, newId(), 10)).toEqual([]);
  });
});
