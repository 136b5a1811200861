import { newId } from "@loom/contracts/ids";
import { openSqlite, type SqliteHandle } from "@loom/store/sqlite";
import { describe, expect, it } from "vitest";
import type { RuleRecord, RulesetRecord } from "../src/store/rulesets.ts";
import { createSqliteAssistantsStore } from "../src/store/sqlite.ts";

const org = newId();
const at = new Date("2026-03-04T05:06:07.089Z");
const later = new Date(at.getTime() + 1000);
const rule = (): RuleRecord => ({
  id: newId(),
  organizationId: org,
  name: "r",
  rule: { type: "object", properties: { a: { type: "string" } } },
  metadata: { k: ["v"] },
  createdBy: "u",
  createdAt: at,
  updatedAt: at,
});
const ruleset = (ruleIds: string[]): RulesetRecord => ({
  id: newId(),
  organizationId: org,
  name: "s",
  description: "",
  metadata: { k: "v" },
  ruleIds,
  createdBy: "u",
  createdAt: at,
  updatedAt: at,
});

/** What only the SQLite adapter promises beyond the store contract: rulesets and rules held once read, written through. */
describe("rulesets store on SQLite", () => {
  it("holds what it read: copies to callers, JSON frozen, writes and deletes reaching later reads, undone writes forgotten", async () => {
    const handle = openSqlite(":memory:");
    let reads = 0;
    const counting: SqliteHandle = {
      ...handle,
      prepare: (sql) => (sql.includes("WHERE id IN (SELECT value FROM json_each(?))") && reads++, handle.prepare(sql)),
    };
    const store = createSqliteAssistantsStore(counting);
    await store.init();
    const [kept, doomed] = [rule(), rule()];
    const s = ruleset([kept.id, doomed.id]);
    await store.insertRule(kept);
    await store.insertRule(doomed);
    await store.insertRuleset(s);

    const first = (await store.getRuleset(org, s.id))!;
    first.ruleIds.push("changed by a caller");
    expect(() => (first.metadata.k = "changed by a caller")).toThrow(TypeError);
    expect(await store.getRuleset(org, s.id)).toEqual(s);
    expect(await store.getRules(org, [kept.id, doomed.id])).toHaveLength(2);
    expect(await store.getRules(org, [kept.id, doomed.id])).toHaveLength(2);
    expect(reads).toBe(2); // one read of the ruleset, one of its rules: the others are the held records'
    expect(await store.getRuleset(newId(), s.id)).toBeUndefined();

    expect(await store.deleteRule(org, doomed.id, later)).toBe(true);
    expect((await store.getRuleset(org, s.id))?.ruleIds).toEqual([kept.id]);
    expect(await store.getRule(org, doomed.id)).toBeUndefined();
    await store.updateRule(org, kept.id, { rule: "Now a string." }, later);
    expect((await store.getRule(org, kept.id))?.rule).toBe("Now a string.");

    // An update undone with its transaction: the ruleset's name comes back, read again from the table.
    expect(() =>
      handle.transaction(() => {
        void store.updateRuleset(org, s.id, { name: "undone" }, later);
        throw new Error("undone");
      }),
    ).toThrow("undone");
    const readsBefore = reads;
    expect((await store.getRuleset(org, s.id))?.name).toBe("s");
    expect(reads).toBe(readsBefore + 1);

    expect(await store.deleteRuleset(org, s.id)).toBe(true);
    expect(await store.getRuleset(org, s.id)).toBeUndefined();
    await handle.close();
  });
});
