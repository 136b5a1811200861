import { newId } from "@loom/contracts/ids";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KnowledgeBasesStore } from "../src/store/port.ts";
import type { KnowledgeBaseQueryRecord, KnowledgeBaseSearchRecord } from "../src/store/queries.ts";
import { openKnowledgeStore } from "../src/wiring.ts";

describe.each(storeKinds("kept queries store contract"))("kept queries and searches store contract (%s)", (kind) => {
  let store: KnowledgeBasesStore;
  const db = freshDatabaseName();
  const org = newId();
  const kb = newId();

  beforeAll(async () => {
    store = await openKnowledgeStore({ url: kind === "mongo" ? testServers.mongoUrl : undefined, db });
    await store.init();
    await store.init();
  });
  afterAll(async () => {
    await store.close();
    if (kind === "mongo") await dropDatabase(testServers.mongoUrl!, db);
  });

  const entries = [
    { id: newId(), score: 0.75, vector: [0.5, -0.25], artifactJson: '{"type":"TextArtifact","value":"a"}' },
    { id: newId(), score: 0.5, artifactJson: '{"type":"TextArtifact","value":"b"}' },
  ];
  const query = (at: string, over: Partial<KnowledgeBaseQueryRecord> = {}): KnowledgeBaseQueryRecord => ({
    id: newId(),
    organizationId: org,
    knowledgeBaseId: kb,
    query: "which port?",
    count: 5,
    includeVectors: true,
    mode: "hybrid",
    entries,
    createdBy: "user-1",
    createdAt: new Date(at),
    ...over,
  });
  const search = (at: string, over: Partial<KnowledgeBaseSearchRecord> = {}): KnowledgeBaseSearchRecord => ({
    id: newId(),
    organizationId: org,
    knowledgeBaseId: kb,
    query: "which port?",
    result: "Port 7431 [1].",
    model: "openai:gpt-4o-mini",
    entries,
    createdBy: "user-1",
    createdAt: new Date(at),
    ...over,
  });

  it("keeps a query as it was answered (entries with and without vectors) and lists a knowledge base's newest first", async () => {
    const older = query("2026-01-01T00:00:00.000Z");
    const newer = query("2026-01-02T00:00:00.000Z", { mode: "keyword", entries: [] });
    const elsewhere = query("2026-01-03T00:00:00.000Z", { knowledgeBaseId: newId() });
    for (const q of [older, newer, elsewhere]) await store.insertQuery(q);
    expect(await store.getQuery(org, older.id)).toEqual(older);
    const page = await store.listQueries(org, kb, 0, 1);
    expect(page).toEqual({ items: [newer], totalCount: 2 });
    expect((await store.listQueries(org, kb, 1, 5)).items).toEqual([older]);
  });

  it("keeps a search with its answer and lists them newest first", async () => {
    const sKb = newId();
    const older = search("2026-02-01T00:00:00.000Z", { knowledgeBaseId: sKb });
    const newer = search("2026-02-02T00:00:00.000Z", { knowledgeBaseId: sKb, result: "No." });
    for (const s of [older, newer]) await store.insertSearch(s);
    expect(await store.getSearch(org, older.id)).toEqual(older);
    expect(await store.listSearches(org, sKb, 0, 10)).toEqual({ items: [newer, older], totalCount: 2 });
  });

  it("another organization reads and lists none of them", async () => {
    const q = query("2026-03-01T00:00:00.000Z");
    const s = search("2026-03-01T00:00:00.000Z");
    await store.insertQuery(q);
    await store.insertSearch(s);
    const other = newId();
    expect(await store.getQuery(other, q.id)).toBeUndefined();
    expect(await store.getSearch(other, s.id)).toBeUndefined();
    expect(await store.listQueries(other, kb, 0, 10)).toEqual({ items: [], totalCount: 0 });
    expect(await store.listSearches(other, kb, 0, 10)).toEqual({ items: [], totalCount: 0 });
  });

  it("deletes a knowledge base's queries and searches, and only that organization's", async () => {
    const gone = newId();
    const q = query("2026-04-01T00:00:00.000Z", { knowledgeBaseId: gone });
    const s = search("2026-04-01T00:00:00.000Z", { knowledgeBaseId: gone });
    const theirs = query("2026-04-01T00:00:00.000Z", { knowledgeBaseId: gone, organizationId: newId() });
    for (const r of [q, theirs]) await store.insertQuery(r);
    await store.insertSearch(s);
    await store.deleteQueriesOf(org, gone);
    await store.deleteQueriesOf(org, gone);
    expect(await store.getQuery(org, q.id)).toBeUndefined();
    expect(await store.getSearch(org, s.id)).toBeUndefined();
    expect(await store.getQuery(theirs.organizationId, theirs.id)).toEqual(theirs);
    expect((await store.listQueries(org, kb, 0, 10)).totalCount).toBeGreaterThan(0);
  });
});
