import { newId } from "@loom/contracts/ids";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AssistantRecord, AssistantsStore } from "../src/store/port.ts";
import { openAssistantsStore } from "../src/wiring.ts";

describe.each(storeKinds("assistants store contract"))("assistants store contract (%s)", (kind) => {
  let store: AssistantsStore;
  const db = freshDatabaseName();
  const org = newId();
  const otherOrg = newId();

  beforeAll(async () => {
    store = await openAssistantsStore({ url: kind === "mongo" ? testServers.mongoUrl : undefined, db });
    await store.init();
    await store.init();
  });
  afterAll(async () => {
    await store.close();
    if (kind === "mongo") await dropDatabase(testServers.mongoUrl!, db);
  });

  const assistant = (over: Partial<AssistantRecord> = {}): AssistantRecord => {
    const at = new Date("2026-03-04T05:06:07.089Z");
    return {
      id: newId(),
      organizationId: org,
      name: "a",
      description: "",
      knowledgeBaseIds: [],
      retrieverIds: [newId()],
      rulesetIds: [],
      structureIds: [],
      toolIds: [newId(), newId()],
      createdBy: "u",
      createdAt: at,
      updatedAt: at,
      ...over,
    };
  };

  it("round-trips an assistant, with and without input, only within its organization", async () => {
    const withInput = assistant({ input: "Say {{ args[0] }}" });
    const without = assistant();
    await store.insert(withInput);
    await store.insert(without);
    expect(await store.get(org, withInput.id)).toEqual(withInput);
    expect(await store.get(org, without.id)).toEqual(without);
    expect(await store.get(otherOrg, withInput.id)).toBeUndefined();
  });

  it("updates only the given fields, only within its organization", async () => {
    const a = assistant({ name: "before", input: "kept" });
    await store.insert(a);
    const at = new Date(a.createdAt.getTime() + 5000);
    expect(await store.update(otherOrg, a.id, { name: "hijacked" }, at)).toBeUndefined();
    const updated = await store.update(org, a.id, { name: "after", toolIds: [] }, at);
    expect(updated).toEqual({ ...a, name: "after", toolIds: [], updatedAt: at });
    expect(await store.get(org, a.id)).toEqual(updated);
    expect(await store.update(org, newId(), { name: "x" }, at)).toBeUndefined();
  });

  it("deletes only within its organization", async () => {
    const a = assistant();
    await store.insert(a);
    expect(await store.delete(otherOrg, a.id)).toBe(false);
    expect(await store.delete(org, a.id)).toBe(true);
    expect(await store.delete(org, a.id)).toBe(false);
    expect(await store.get(org, a.id)).toBeUndefined();
  });

  it("lists an organization's assistants newest first, ties by id, with a total", async () => {
    const listOrg = newId();
    const same = new Date("2026-06-01T00:00:01.000Z");
    const made = [
      assistant({ organizationId: listOrg, createdAt: new Date("2026-06-01T00:00:00.000Z") }),
      assistant({ organizationId: listOrg, createdAt: same }),
      assistant({ organizationId: listOrg, createdAt: same }),
    ];
    for (const a of made) await store.insert(a);
    const expected = [made[1]!, made[2]!].sort((a, b) => (a.id < b.id ? 1 : -1)).concat(made[0]!);
    const first = await store.list(listOrg, 0, 2);
    const second = await store.list(listOrg, 2, 2);
    expect(first.totalCount).toBe(3);
    expect([...first.items, ...second.items].map((a) => a.id)).toEqual(expected.map((a) => a.id));
    expect((await store.list(newId(), 0, 10)).totalCount).toBe(0);
  });
});
