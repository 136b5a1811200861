import { newId } from "@loom/contracts/ids";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DataConnectorRecord } from "../src/store/data-connectors.ts";
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
      dataConnectorIds: [],
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
      dataConnectorIds: [newId(), newId()],
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
    const connectorIds = [newId()];
    const updated = await store.update(
      org,
      kb.id,
      { name: "after", embeddingModel: "openai:m", assetPaths: [], dataConnectorIds: connectorIds },
      at,
    );
    expect(updated).toEqual({
      ...kb,
      name: "after",
      embeddingModel: "openai:m",
      assetPaths: [],
      dataConnectorIds: connectorIds,
      updatedAt: at,
    });
    expect(await store.get(org, kb.id)).toEqual(updated);
    // "" is a value (no model), not an absent field.
    expect(await store.update(org, kb.id, { embeddingModel: "" }, at)).toEqual({ ...updated, embeddingModel: "" });
    expect(await store.update(org, newId(), { name: "x" }, at)).toBeUndefined();
  });

  it("reads several by id, only within its organization", async () => {
    const [a, b] = [knowledgeBase(), knowledgeBase()];
    const foreign = knowledgeBase({ organizationId: otherOrg });
    for (const kb of [a, b, foreign]) await store.insert(kb);
    const found = await store.getMany(org, [b.id, newId(), foreign.id, a.id]);
    expect(found.sort((x, y) => (x.id < y.id ? -1 : 1))).toEqual([a, b].sort((x, y) => (x.id < y.id ? -1 : 1)));
    expect(await store.getMany(org, [])).toEqual([]);
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

  const connector = (over: Partial<DataConnectorRecord> = {}): DataConnectorRecord => {
    const at = new Date("2026-03-04T05:06:07.089Z");
    return {
      id: newId(),
      organizationId: org,
      name: "c",
      description: "",
      bucketId: newId(),
      assetPaths: [],
      createdBy: "u",
      createdAt: at,
      updatedAt: at,
      ...over,
    };
  };

  it("round-trips a data connector, its paths in their order, only within its organization", async () => {
    const full = connector({ description: "wiki", assetPaths: ["b.md", "docs/", "a.md"] });
    const bare = connector();
    await store.insertDataConnector(full);
    await store.insertDataConnector(bare);
    expect(await store.getDataConnector(org, full.id)).toEqual(full);
    expect(await store.getDataConnector(org, bare.id)).toEqual(bare);
    expect(await store.getDataConnector(otherOrg, full.id)).toBeUndefined();
  });

  it("updates only a data connector's given fields, only within its organization", async () => {
    const c = connector({ name: "before", assetPaths: ["x/"] });
    await store.insertDataConnector(c);
    const at = new Date(c.createdAt.getTime() + 5000);
    expect(await store.updateDataConnector(otherOrg, c.id, { name: "hijacked" }, at)).toBeUndefined();
    const bucketId = newId();
    const updated = await store.updateDataConnector(org, c.id, { name: "after", bucketId, assetPaths: [] }, at);
    expect(updated).toEqual({ ...c, name: "after", bucketId, assetPaths: [], updatedAt: at });
    expect(await store.getDataConnector(org, c.id)).toEqual(updated);
    expect(await store.updateDataConnector(org, newId(), { name: "x" }, at)).toBeUndefined();
  });

  it("deletes a data connector only within its organization, taking its id out of the knowledge bases naming it", async () => {
    const doomed = connector();
    const kept = connector();
    await store.insertDataConnector(doomed);
    await store.insertDataConnector(kept);
    const naming = knowledgeBase({ dataConnectorIds: [kept.id, doomed.id] });
    const other = knowledgeBase({ dataConnectorIds: [kept.id] });
    await store.insert(naming);
    await store.insert(other);
    const at = new Date(naming.createdAt.getTime() + 7000);
    expect(await store.deleteDataConnector(otherOrg, doomed.id, at)).toBe(false);
    expect(await store.getDataConnector(org, doomed.id)).toEqual(doomed);
    expect(await store.deleteDataConnector(org, doomed.id, at)).toBe(true);
    expect(await store.deleteDataConnector(org, doomed.id, at)).toBe(false);
    expect(await store.getDataConnector(org, doomed.id)).toBeUndefined();
    expect(await store.get(org, naming.id)).toEqual({ ...naming, dataConnectorIds: [kept.id], updatedAt: at });
    expect(await store.get(org, other.id)).toEqual(other);
  });

  it("lists an organization's data connectors newest first, with a total, and says which ids are its own", async () => {
    const listOrg = newId();
    const made = [
      connector({ organizationId: listOrg, createdAt: new Date("2026-06-01T00:00:00.000Z") }),
      connector({ organizationId: listOrg, createdAt: new Date("2026-06-01T00:00:02.000Z") }),
      connector({ organizationId: listOrg, createdAt: new Date("2026-06-01T00:00:01.000Z") }),
    ];
    for (const c of made) await store.insertDataConnector(c);
    const first = await store.listDataConnectors(listOrg, 0, 2);
    const second = await store.listDataConnectors(listOrg, 2, 2);
    expect(first.totalCount).toBe(3);
    expect([...first.items, ...second.items]).toEqual([made[1], made[2], made[0]]);
    const foreign = connector();
    await store.insertDataConnector(foreign);
    expect(await store.existingDataConnectorIds(listOrg, [made[0]!.id, foreign.id, newId(), made[2]!.id])).toEqual(
      new Set([made[0]!.id, made[2]!.id]),
    );
    expect(await store.existingDataConnectorIds(listOrg, [])).toEqual(new Set());
  });
});
