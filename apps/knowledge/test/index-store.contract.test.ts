import { Code, ConnectError } from "@connectrpc/connect";
import { newId } from "@loom/contracts/ids";
import { connectMongo, type MongoHandle } from "@loom/store/mongo";
import { dropDatabase, freshDatabaseName, needs, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inverseDocumentFrequency, termScore } from "../src/index/bm25.ts";
import { createMongoChunkIndex } from "../src/index/mongo.ts";
import { openChunkIndex } from "../src/index/open.ts";
import type { ChunkIndex, KnowledgeScope, NewChunk } from "../src/index/port.ts";
import { searchChunks } from "../src/index/search.ts";

const at = new Date("2026-03-04T05:06:07.089Z");
const chunk = (index: number, text: string, embedding?: number[]): NewChunk => ({
  text,
  position: { index },
  ...(embedding ? { embedding: new Float32Array(embedding) } : {}),
});
const texts = (found: { chunk: { text: string } }[]) => found.map((hit) => hit.chunk.text);

describe.each(storeKinds("knowledge chunk index contract"))("knowledge chunk index contract (%s)", (kind) => {
  let index: ChunkIndex;
  const db = freshDatabaseName();
  const org = newId();
  const scopeIn = (organizationId = org): KnowledgeScope => ({ organizationId, knowledgeBaseId: newId() });
  const bucketId = newId();

  beforeAll(async () => {
    index = await openChunkIndex({ url: kind === "mongo" ? testServers.mongoUrl : undefined, db });
    await index.init();
    await index.init();
  });
  afterAll(async () => {
    await index.close();
    if (kind === "mongo") await dropDatabase(testServers.mongoUrl!, db);
  });

  it("replaces an asset's chunks as a whole, keeps its version and counts its chunks", async () => {
    const scope = scopeIn();
    await index.replaceAsset(
      scope,
      { bucketId, path: "a.md", version: "v1" },
      [chunk(0, "alpha one"), chunk(1, "alpha two")],
      at,
    );
    await index.replaceAsset(scope, { bucketId, path: "b.md", version: "v1" }, [chunk(0, "beta")], at);
    expect(await index.countChunks(scope)).toBe(3);

    const later = new Date(at.getTime() + 1000);
    await index.replaceAsset(scope, { bucketId, path: "a.md", version: "v2" }, [chunk(0, "alpha three")], later);
    expect(await index.countChunks(scope)).toBe(2);
    expect(texts(await index.keywordSearch(scope, "alpha", 10))).toEqual(["alpha three"]);
    expect(await index.indexedAssets(scope)).toEqual([
      { bucketId, path: "a.md", version: "v2", chunkCount: 1, indexedAt: later },
      { bucketId, path: "b.md", version: "v1", chunkCount: 1, indexedAt: at },
    ]);

    // An asset with no text is kept with its version, so that ingest skips it while it is unchanged.
    await index.replaceAsset(scope, { bucketId, path: "b.md", version: "v2" }, [], later);
    expect(await index.countChunks(scope)).toBe(1);
    expect(await index.keywordSearch(scope, "beta", 10)).toEqual([]);
    expect((await index.indexedAssets(scope)).map((asset) => [asset.path, asset.version, asset.chunkCount])).toEqual([
      ["a.md", "v2", 1],
      ["b.md", "v2", 0],
    ]);
  });

  // FerretDB, the test server, writes a document in milliseconds under load: a minute for a thousand and more.
  it("replaces an asset of more chunks than one write takes", { timeout: 60_000 }, async () => {
    const scope = scopeIn();
    const many = Array.from({ length: 1_001 }, (_, i) => chunk(i, `part ${i} of the manual`, [1, i]));
    await index.replaceAsset(scope, { bucketId, path: "manual.md", version: "v1" }, many, at);
    expect(await index.countChunks(scope)).toBe(1_001);
    expect((await index.keywordSearch(scope, "part 1000", 1))[0]!.chunk.position).toEqual({ index: 1_000 });
    await index.replaceAsset(scope, { bucketId, path: "manual.md", version: "v2" }, many.slice(0, 2), at);
    expect(await index.countChunks(scope)).toBe(2);
    expect(await index.keywordSearch(scope, "1000", 1)).toEqual([]);
    expect(await index.vectorSearch(scope, new Float32Array([1, 1]), 5)).toHaveLength(2);
  });

  it("gives a chunk back as it was given: text, position, asset, embedding", async () => {
    const scope = scopeIn();
    const given: NewChunk = {
      text: "the Ångström unit",
      position: { index: 3, start: 120, end: 137, headings: ["Units", "Length"] },
      embedding: new Float32Array([0.25, -1.5, 3]),
    };
    await index.replaceAsset(scope, { bucketId, path: "docs/units.md", version: "e1" }, [given], at);
    const [hit] = await index.keywordSearch(scope, "angstrom", 1);
    expect(hit!.chunk).toEqual({ id: expect.any(String), bucketId, path: "docs/units.md", ...given });
    const [near] = await index.vectorSearch(scope, new Float32Array([0.25, -1.5, 3]), 1);
    expect(near!.chunk).toEqual(hit!.chunk);
  });

  it("removes an asset, and a whole knowledge base", async () => {
    const scope = scopeIn();
    await index.replaceAsset(scope, { bucketId, path: "a.md", version: "v1" }, [chunk(0, "gamma")], at);
    await index.replaceAsset(scope, { bucketId, path: "b.md", version: "v1" }, [chunk(0, "gamma delta")], at);
    expect(await index.removeAsset(scope, { bucketId, path: "a.md" })).toBe(true);
    expect(await index.removeAsset(scope, { bucketId, path: "a.md" })).toBe(false);
    expect(await index.removeAsset(scope, { bucketId: newId(), path: "b.md" })).toBe(false);
    expect(texts(await index.keywordSearch(scope, "gamma", 10))).toEqual(["gamma delta"]);
    expect((await index.indexedAssets(scope)).map((asset) => asset.path)).toEqual(["b.md"]);

    await index.removeKnowledgeBase(scope);
    expect(await index.countChunks(scope)).toBe(0);
    expect(await index.indexedAssets(scope)).toEqual([]);
    expect(await index.keywordSearch(scope, "gamma", 10)).toEqual([]);
    // A knowledge base removed twice, or never indexed, is no error; one indexed again starts empty.
    await index.removeKnowledgeBase(scope);
    await index.removeKnowledgeBase(scopeIn());
    await index.replaceAsset(scope, { bucketId, path: "c.md", version: "v1" }, [chunk(0, "gamma again")], at);
    expect(texts(await index.keywordSearch(scope, "gamma", 10))).toEqual(["gamma again"]);
  });

  it("ranks by BM25: a rare term's chunk first, with the score FTS5 gives, over stemmed, unaccented words", async () => {
    const scope = scopeIn();
    const common = Array.from({ length: 8 }, (_, i) => chunk(i, `the service answers requests quickly, note ${i}`));
    await index.replaceAsset(scope, { bucketId, path: "common.md", version: "v1" }, common, at);
    await index.replaceAsset(
      scope,
      { bucketId, path: "rare.md", version: "v1" },
      [chunk(0, "the service keeps a zeppelin in the hangar")],
      at,
    );
    const found = await index.keywordSearch(scope, "Which service has the zeppelin?", 3);
    expect(found[0]!.chunk.text).toBe("the service keeps a zeppelin in the hangar");
    expect(found).toHaveLength(1);

    // "zeppelin" is in 1 chunk of 9, in a chunk of 8 terms; "service" and "the" are in all 9, their IDF floored
    // to 1e-6, so they are left out of the score (bm25.ts, termsWorthScoring); "which" and "has" are in none.
    const corpus = { chunkCount: 9, averageLength: (8 * 7 + 8) / 9 };
    expect(found[0]!.score).toBeCloseTo(termScore(corpus, inverseDocumentFrequency(corpus, 1), 1, 8), 6);
    // Two words of one term are one term: scored once.
    expect((await index.keywordSearch(scope, "zeppelin zeppelins", 1))[0]!.score).toBeCloseTo(found[0]!.score, 9);
    expect(texts(await index.keywordSearch(scope, "ZEPPELINS", 1))).toEqual([
      "the service keeps a zeppelin in the hangar",
    ]);
    // Only common words: they are scored then, so their chunks are still found.
    expect(await index.keywordSearch(scope, "answered", 20)).toHaveLength(8);
    expect(texts(await index.keywordSearch(scope, "the service", 20))).toHaveLength(9);
    await index.replaceAsset(scope, { bucketId, path: "cafe.md", version: "v1" }, [chunk(0, "Le café crème")], at);
    expect(texts(await index.keywordSearch(scope, "cafe creme", 1))).toEqual(["Le café crème"]);
  });

  it("takes any text as a query: FTS5 syntax in a question is words, never an error", async () => {
    const scope = scopeIn();
    await index.replaceAsset(
      scope,
      { bucketId, path: "a.md", version: "v1" },
      [chunk(0, "near the column text and more")],
      at,
    );
    for (const query of [
      '"unbalanced text',
      "NEAR(column text, 2)",
      "text AND OR NOT",
      "col:text",
      "text*",
      "^text",
      "(text",
      "-text +more",
      "{text}",
      "text\u0000more",
    ]) {
      expect(texts(await index.keywordSearch(scope, query, 5)), query).toEqual(["near the column text and more"]);
    }
    for (const query of ["", "   ", "*", '""', "?!", "()"])
      expect(await index.keywordSearch(scope, query, 5), query).toEqual([]);
  });

  it("finds the nearest chunks by cosine similarity, and refuses another dimension without changing anything", async () => {
    const scope = scopeIn();
    await index.replaceAsset(
      scope,
      { bucketId, path: "v.md", version: "v1" },
      [
        chunk(0, "east", [1, 0, 0]),
        chunk(1, "north-east", [1, 1, 0]),
        chunk(2, "up", [0, 0, 5]),
        chunk(3, "west", [-2, 0, 0]),
      ],
      at,
    );
    const found = await index.vectorSearch(scope, new Float32Array([3, 0.2, 0]), 3);
    expect(texts(found)).toEqual(["east", "north-east", "up"]);
    expect(found[0]!.score).toBeCloseTo(3 / Math.sqrt(9.04), 6);
    expect(found[1]!.score).toBeCloseTo(3.2 / (Math.sqrt(9.04) * Math.SQRT2), 6);
    expect(found[2]!.score).toBeCloseTo(0, 6);
    expect((await index.vectorSearch(scope, new Float32Array([-1, 0, 0]), 1))[0]!.score).toBeCloseTo(1, 6);

    const refused = (call: Promise<unknown>) =>
      expect(call).rejects.toSatisfy((error) => ConnectError.from(error).code === Code.FailedPrecondition);
    await refused(index.vectorSearch(scope, new Float32Array([1, 0]), 3));
    await refused(index.replaceAsset(scope, { bucketId, path: "v.md", version: "v2" }, [chunk(0, "flat", [1, 0])], at));
    await refused(
      index.replaceAsset(
        scope,
        { bucketId, path: "w.md", version: "v1" },
        [chunk(0, "a", [1, 0, 0]), chunk(1, "b", [1, 0])],
        at,
      ),
    );
    expect(texts(await index.vectorSearch(scope, new Float32Array([1, 0, 0]), 10))).toHaveLength(4);
    expect((await index.indexedAssets(scope)).map((asset) => [asset.path, asset.version])).toEqual([["v.md", "v1"]]);

    // A knowledge base without embeddings has no vector results.
    const plain = scopeIn();
    await index.replaceAsset(plain, { bucketId, path: "p.md", version: "v1" }, [chunk(0, "east")], at);
    expect(await index.vectorSearch(plain, new Float32Array([1, 0, 0]), 3)).toEqual([]);
  });

  it("fuses keyword and vector rankings, and searches by keywords alone without an embedding", async () => {
    const scope = scopeIn();
    await index.replaceAsset(
      scope,
      { bucketId, path: "f.md", version: "v1" },
      [
        chunk(0, "the reactor coolant pump", [1, 0, 0]),
        chunk(1, "the reactor control room", [0, 1, 0]),
        chunk(2, "pumping stations of the city", [0.9, 0.1, 0]),
        chunk(3, "a garden", [0, 0, 1]),
      ],
      at,
    );
    const hybrid = await searchChunks(index, scope, {
      query: "reactor pump",
      embedding: new Float32Array([1, 0, 0]),
      limit: 3,
    });
    expect(hybrid.mode).toBe("hybrid");
    // First in both rankings: the best a chunk can be, score 1.
    expect(hybrid.chunks[0]).toMatchObject({
      chunk: { text: "the reactor coolant pump" },
      score: 1,
      keyword: { rank: 1 },
      vector: { rank: 1, score: expect.closeTo(1, 6) },
    });
    expect(texts(hybrid.chunks)).toHaveLength(3);
    expect(hybrid.chunks[1]!.score).toBeLessThan(1);

    const keyword = await searchChunks(index, scope, { query: "garden", limit: 3 });
    expect(keyword).toEqual({
      mode: "keyword",
      chunks: [
        {
          chunk: expect.objectContaining({ text: "a garden" }),
          score: expect.any(Number),
          keyword: { rank: 1, score: expect.any(Number) },
        },
      ],
    });
    expect(keyword.chunks[0]!.score).toBe(keyword.chunks[0]!.keyword!.score);
  });

  it("keeps each organization's and knowledge base's chunks to itself", async () => {
    const scope = scopeIn();
    await index.replaceAsset(
      scope,
      { bucketId, path: "secret.md", version: "v1" },
      [chunk(0, "the launch code is swordfish", [1, 2, 3])],
      at,
    );
    const otherOrganization = { organizationId: newId(), knowledgeBaseId: scope.knowledgeBaseId };
    const otherBase = scopeIn();
    for (const other of [otherOrganization, otherBase]) {
      expect(await index.keywordSearch(other, "swordfish launch code", 10)).toEqual([]);
      expect(await index.vectorSearch(other, new Float32Array([1, 2, 3]), 10)).toEqual([]);
      expect(await index.countChunks(other)).toBe(0);
      expect(await index.indexedAssets(other)).toEqual([]);
      expect(await index.removeAsset(other, { bucketId, path: "secret.md" })).toBe(false);
      await index.removeKnowledgeBase(other);
    }
    expect(texts(await index.keywordSearch(scope, "swordfish", 10))).toEqual(["the launch code is swordfish"]);
    expect(await index.countChunks(scope)).toBe(1);
  });
});

/** The driver's calls that write: a crash can come before any of them. */
const writes = new Set(["insertMany", "insertOne", "updateOne", "findOneAndUpdate", "deleteMany", "deleteOne"]);

/** The handle's database, but the `crashAt`-th write (from 1) and every one after it fail: the process died there. */
function dyingAt(handle: MongoHandle, crashAt: number): MongoHandle {
  let written = 0;
  const db = new Proxy(handle.db, {
    get(target, name, receiver) {
      if (name !== "collection") return Reflect.get(target, name, receiver);
      return (collectionName: string) =>
        new Proxy(target.collection(collectionName), {
          get(collection, member, itself) {
            const value = Reflect.get(collection, member, itself);
            if (typeof value !== "function" || !writes.has(String(member))) return value;
            return (...args: unknown[]) =>
              ++written >= crashAt ? Promise.reject(new Error("the process died")) : value.apply(collection, args);
          },
        });
    },
  });
  return { ...handle, db };
}

describe.skipIf(!needs("MONGODB_URL", "knowledge chunk index on MongoDB, crashes"))(
  "knowledge chunk index on MongoDB: a crash at any write of a replacement or removal",
  () => {
    let handle: MongoHandle;
    let index: ChunkIndex;
    const db = freshDatabaseName();
    const bucketId = newId();
    const asset = { bucketId, path: "guide.md" };
    const oldSet = [chunk(0, "old set first", [1, 0]), chunk(1, "old set second", [0, 1])];
    const newSet = [
      chunk(0, "new set first", [1, 1]),
      chunk(1, "new set second", [1, 0]),
      chunk(2, "new set third", [0, 1]),
    ];

    beforeAll(async () => {
      handle = await connectMongo(testServers.mongoUrl!, db);
      index = createMongoChunkIndex(handle);
      await index.init();
    });
    afterAll(async () => {
      await handle.close();
      await dropDatabase(testServers.mongoUrl!, db);
    });

    /** What searches see, and what is stored at all, in the knowledge base. */
    const seen = async (scope: KnowledgeScope) => ({
      keyword: texts(await index.keywordSearch(scope, "set", 10)).sort(),
      vector: texts(await index.vectorSearch(scope, new Float32Array([1, 1]), 10)).sort(),
      versions: (await index.indexedAssets(scope)).map((indexed) => indexed.version),
      count: await index.countChunks(scope),
      storedChunks: await handle.db.collection("chunks").countDocuments(scope),
    });
    const sorted = (set: NewChunk[]) => set.map((c) => c.text).sort();
    const asBefore = (set: NewChunk[], version: string) => ({
      keyword: sorted(set),
      vector: sorted(set),
      versions: [version],
      count: set.length,
      storedChunks: set.length,
    });
    const gone = { keyword: [], vector: [], versions: [], count: 0, storedChunks: 0 };

    // Nine replacements, each checked twice: allow FerretDB under load its time.
    it("replacing: searches see the old set or the new one whole, and a sweep leaves only what they see", {
      timeout: 60_000,
    }, async () => {
      let completed = false;
      for (let crashAt = 1; !completed; crashAt++) {
        const scope: KnowledgeScope = { organizationId: newId(), knowledgeBaseId: newId() };
        await index.replaceAsset(scope, { ...asset, version: "v1" }, oldSet, at);
        const dying = createMongoChunkIndex(dyingAt(handle, crashAt));
        completed = await dying.replaceAsset(scope, { ...asset, version: "v2" }, newSet, at).then(
          () => true,
          () => false,
        );
        const after = await seen(scope);
        const visible = after.versions[0] === "v2" ? newSet : oldSet;
        expect({ ...after, storedChunks: undefined }, `crash at write ${crashAt}`).toEqual({
          ...asBefore(visible, after.versions[0] === "v2" ? "v2" : "v1"),
          storedChunks: undefined,
        });
        // A restarted ingest sweeps before its first asset: only what searches see is left.
        await index.sweep(scope);
        expect(await seen(scope), `crash at write ${crashAt}, swept`).toEqual(
          asBefore(visible, after.versions[0] === "v2" ? "v2" : "v1"),
        );
        expect(await handle.db.collection("chunks").distinct("generation", scope)).toHaveLength(1);
        if (completed) expect(crashAt).toBeGreaterThan(4);
      }
    });

    it("removing: searches see the asset whole or not at all, and a sweep leaves nothing of it", {
      timeout: 60_000,
    }, async () => {
      let completed = false;
      for (let crashAt = 1; !completed; crashAt++) {
        const scope: KnowledgeScope = { organizationId: newId(), knowledgeBaseId: newId() };
        await index.replaceAsset(scope, { ...asset, version: "v1" }, oldSet, at);
        const dying = createMongoChunkIndex(dyingAt(handle, crashAt));
        completed = await dying.removeAsset(scope, asset).then(
          () => true,
          () => false,
        );
        const after = await seen(scope);
        const removed = after.versions.length === 0;
        expect({ ...after, storedChunks: undefined }, `crash at write ${crashAt}`).toEqual({
          ...(removed ? gone : asBefore(oldSet, "v1")),
          storedChunks: undefined,
        });
        await index.sweep(scope);
        expect(await seen(scope), `crash at write ${crashAt}, swept`).toEqual(removed ? gone : asBefore(oldSet, "v1"));
        if (removed) expect(await handle.db.collection("chunk_assets").countDocuments(scope)).toBe(0);
      }
    });
  },
);

// MongoDB's half-done replacements are the crash suite's above; on SQLite a replacement is one transaction.
describe("knowledge chunk index on SQLite: a replacement that fails halfway", () => {
  it("changes nothing: the old chunks, their terms, embeddings and version stay", async () => {
    const index = await openChunkIndex({ db: "unused" });
    await index.init();
    const scope: KnowledgeScope = { organizationId: newId(), knowledgeBaseId: newId() };
    const asset = { bucketId: newId(), path: "a.md" };
    await index.replaceAsset(scope, { ...asset, version: "v1" }, [chunk(0, "old words", [1, 0])], at);
    // The third chunk's position is not a number: SQLite refuses its row after the old rows went and two new ones came.
    const failing = [chunk(0, "new words", [0, 1]), chunk(1, "new words too", [0, 1]), chunk(Number.NaN, "new words")];
    await expect(index.replaceAsset(scope, { ...asset, version: "v2" }, failing, at)).rejects.toThrow(
      "NOT NULL constraint failed: knowledge_index_chunks.position",
    );
    expect(texts(await index.keywordSearch(scope, "words", 10))).toEqual(["old words"]);
    expect(texts(await index.vectorSearch(scope, new Float32Array([0, 1]), 10))).toEqual(["old words"]);
    expect((await index.indexedAssets(scope)).map((indexed) => indexed.version)).toEqual(["v1"]);
    expect(await index.countChunks(scope)).toBe(1);
    await index.close();
  });
});
