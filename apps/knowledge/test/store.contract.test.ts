import { newId } from "@loom/contracts/ids";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KnowledgeBaseRecord, KnowledgeBasesStore } from "../src/store/port.ts";
import { openKnowledgeStore } from "../src/wiring.ts";

describe.each(storeKinds("knowledge bases store contract"))("knowledge bases store contract (%s)", (kind) => {
  let store: KnowledgeBasesStore;
  const db = freshDatabaseName();
  const org = newId();
  const otherOrg = newId();

  beforeAll(async () => {
    store = await openKnowledgeStore({ url: kind === "mongo" ? testServers.mongoUrl : undefined, db });
    await store.init();
    await store.init();
  });
  afterAll(async () => {
    await store.close();
    if (kind === "mongo") await dropDatabase(testServers.mongoUrl!, db);
  });

  const knowledgeBase = (over: Partial<KnowledgeBaseRecord> = {}): KnowledgeBaseRecord => {
    const at = new Date("2026-03-04T05:06:07.089Z");
    return {
      id: newId(),
      organizationId: org,
      name: "kb",
      description: "",
      embeddingModel: "",
      assetPaths: [],
      createdBy: "u",
      createdAt: at,
      updatedAt: at,
      ...over,
    };
  };

  it("round-trips a knowledge base, its paths in their order, only within its organization", async () => {
    const bucket = newId();
    const full = knowledgeBase({
      description: "handbook",
      embeddingModel: "openai-compatible:bge-small",
      assetPaths: [`${bucket}/z.md`, `${bucket}/docs/`, `${newId()}/`],
    });
    const bare = knowledgeBase();
    await store.insert(full);
    await store.insert(bare);
    expect(await store.get(org, full.id)).toEqual(full);
    expect(await store.get(org, bare.id)).toEqual(bare);
    expect(await store.get(otherOrg, full.id)).toBeUndefined();
  });

  it("updates only the given fields, only within its organization", async () => {
    const kb = knowledgeBase({ name: "before", description: "kept", assetPaths: [`${newId()}/a`] });
    await store.insert(kb);
    const at = new Date(kb.createdAt.getTime() + 5000);
    expect(await store.update(otherOrg, kb.id, { name: "hijacked" }, at)).toBeUndefined();
    const updated = await store.update(org, kb.id, { name: "after", embeddingModel: "openai:m", assetPaths: [] }, at);
    expect(updated).toEqual({ ...kb, name: "after", embeddingModel: "openai:m", assetPaths: [], updatedAt: at });
    expect(await store.get(org, kb.id)).toEqual(updated);
    // "" is a value (no model), not an absent field.
    expect(await store.update(org, kb.id, { embeddingModel: "" }, at)).toEqual({ ...updated, embeddingModel: "" });
    expect(await store.update(org, newId(), { name: "x" }, at)).toBeUndefined();
  });

  it("deletes only within its organization", async () => {
    const kb = knowledgeBase();
    await store.insert(kb);
    expect(await store.delete(otherOrg, kb.id)).toBe(false);
    expect(await store.delete(org, kb.id)).toBe(true);
    expect(await store.delete(org, kb.id)).toBe(false);
    expect(await store.get(org, kb.id)).toBeUndefined();
  });

  it("lists an organization's knowledge bases newest first, ties by id, with a total", async () => {
    const listOrg = newId();
    const same = new Date("2026-06-01T00:00:01.000Z");
    const made = [
      knowledgeBase({ organizationId: listOrg, createdAt: new Date("2026-06-01T00:00:00.000Z") }),
      knowledgeBase({ organizationId: listOrg, createdAt: same }),
      knowledgeBase({ organizationId: listOrg, createdAt: same }),
    ];
    for (const kb of made) await store.insert(kb);
    const expected = [made[1]!, made[2]!].sort((a, b) => (a.id < b.id ? 1 : -1)).concat(made[0]!);
    const first = await store.list(listOrg, 0, 2);
    const second = await store.list(listOrg, 2, 2);
    expect(first.totalCount).toBe(3);
    expect([...first.items, ...second.items]).toEqual(expected);
    expect((await store.list(newId(), 0, 10)).totalCount).toBe(0);
  });
});
