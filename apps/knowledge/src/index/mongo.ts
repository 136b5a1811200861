import { newId } from "@loom/contracts/ids";
import type { MongoHandle } from "@loom/store/mongo";
import { Binary, type Collection, type OptionalUnlessRequiredId } from "mongodb";
import { type CorpusStatistics, flooredAt, inverseDocumentFrequency, termScore, termsWorthScoring } from "./bm25.ts";
import type { AssetKey, ChunkIndex, ChunkPosition, IndexedChunk, KnowledgeScope, RankedChunk } from "./port.ts";
import { queryWordsOf, termFrequencies } from "./terms.ts";
import { bestOf, checkDimension, cosineOf, dimensionOf, lengthOf, vectorOf } from "./vectors.ts";

/** A knowledge base's one embedding dimension, once it has embeddings. */
interface BaseDoc {
  _id: string;
  organizationId: string;
  knowledgeBaseId: string;
  dimension?: number;
}

/**
 * An asset: `generation` names the set of chunks searches see (absent: none, the asset is not indexed). `stale`
 * names sets that may still have chunks but are not, or not yet, current: the one being written and the ones
 * replaced, until they are deleted.
 */
interface AssetDoc extends AssetKey {
  _id: string;
  organizationId: string;
  knowledgeBaseId: string;
  version?: string;
  generation?: string;
  chunkCount: number;
  /** The length in terms of its chunks together: BM25's mean length is the sum over current assets. */
  termCount: number;
  indexedAt?: Date;
  stale: string[];
}

/**
 * A chunk, with its postings: its distinct terms, how often each occurs (two arrays of one length), and its length
 * in terms. A multikey index on `terms` finds the chunks that have a term; keeping them in the chunk rather than in
 * documents of their own writes one document per chunk (a document per term per asset was 50 times as many, and
 * FerretDB, the test server, writes each in milliseconds).
 */
interface ChunkDoc extends AssetKey {
  _id: string;
  organizationId: string;
  knowledgeBaseId: string;
  generation: string;
  position: ChunkPosition;
  text: string;
  embedding?: Binary;
  terms: string[];
  frequencies: number[];
  length: number;
}

/** Documents written per insertMany. */
const batchSize = 1_000;

/**
 * The chunk index on MongoDB, or any server of its wire protocol: FerretDB 1.24, the test server, has neither
 * `$text` nor `$vectorSearch` nor transactions, so the index keeps its own postings (in each chunk's document)
 * and Loom scores BM25 itself, with FTS5's formula and terms (bm25.ts, terms.ts); vector search is
 * an exact scan. An asset's chunks are replaced without a transaction: the new set is written under a new
 * generation no search sees, the asset's record is switched to it in one single-document update, and the old
 * set is deleted after; what a crash leaves between these steps is named in the record's `stale` and deleted by
 * `sweep` (docs/decisions.md, "Knowledge index").
 */
export function createMongoChunkIndex({ db, ping, close }: MongoHandle): ChunkIndex {
  const bases: Collection<BaseDoc> = db.collection("chunk_bases");
  const assets: Collection<AssetDoc> = db.collection("chunk_assets");
  const chunks: Collection<ChunkDoc> = db.collection("chunks");
  const inScope = ({ organizationId, knowledgeBaseId }: KnowledgeScope) => ({ organizationId, knowledgeBaseId });

  const insertInBatches = async <T extends { _id: string }>(
    collection: Collection<T>,
    docs: OptionalUnlessRequiredId<T>[],
  ) => {
    for (let at = 0; at < docs.length; at += batchSize) await collection.insertMany(docs.slice(at, at + batchSize));
  };

  /** Deletes the chunks and postings of an asset's stale generations, then forgets them. */
  const deleteStale = async (scope: KnowledgeScope, asset: AssetDoc) => {
    const stale = asset.stale.filter((generation) => generation !== asset.generation);
    if (stale.length === 0) return;
    await chunks.deleteMany({ ...inScope(scope), generation: { $in: stale } });
    await assets.updateOne({ _id: asset._id }, { $pull: { stale: { $in: stale } } });
  };

  /** The generations searches see, and BM25's statistics over their chunks. */
  const current = async (scope: KnowledgeScope) => {
    const docs = await assets
      .find(
        { ...inScope(scope), generation: { $exists: true } },
        { projection: { generation: 1, chunkCount: 1, termCount: 1 } },
      )
      .toArray();
    const chunkCount = docs.reduce((sum, doc) => sum + doc.chunkCount, 0);
    const length = docs.reduce((sum, doc) => sum + doc.termCount, 0);
    const corpus: CorpusStatistics = { chunkCount, averageLength: chunkCount > 0 ? length / chunkCount : 0 };
    return { generations: new Set(docs.map((doc) => doc.generation!)), corpus };
  };

  const chunkOf = (doc: ChunkDoc): IndexedChunk => ({
    id: doc._id,
    bucketId: doc.bucketId,
    path: doc.path,
    text: doc.text,
    position: doc.position,
    ...(doc.embedding ? { embedding: vectorOf(doc.embedding.buffer) } : {}),
  });

  /** The chunks of the best ids, as ranked. */
  const ranked = async (scope: KnowledgeScope, best: { item: string; score: number }[]): Promise<RankedChunk[]> => {
    const found = new Map(
      (
        await chunks
          .find(
            { ...inScope(scope), _id: { $in: best.map((hit) => hit.item) } },
            { projection: { terms: 0, frequencies: 0, length: 0 } },
          )
          .toArray()
      ).map((doc) => [doc._id, chunkOf(doc)]),
    );
    return best.flatMap(({ item, score }) => {
      const chunk = found.get(item);
      return chunk ? [{ chunk, score }] : [];
    });
  };

  return {
    async init() {
      await bases.createIndex({ organizationId: 1, knowledgeBaseId: 1 }, { unique: true });
      await assets.createIndex({ organizationId: 1, knowledgeBaseId: 1, bucketId: 1, path: 1 }, { unique: true });
      await chunks.createIndex({ organizationId: 1, knowledgeBaseId: 1, generation: 1 });
      await chunks.createIndex({ organizationId: 1, knowledgeBaseId: 1, terms: 1 });
    },
    ready: ping,
    close,

    async replaceAsset(scope, { bucketId, path, version }, newChunks, at) {
      const dimension = dimensionOf(newChunks.map((chunk) => chunk.embedding));
      const base = await bases.findOneAndUpdate(
        inScope(scope),
        { $setOnInsert: { _id: newId(), ...inScope(scope) } },
        { upsert: true, returnDocument: "after" },
      );
      checkDimension(base?.dimension, dimension, "an embedding of these chunks");
      if (base?.dimension === undefined && dimension !== undefined) {
        await bases.updateOne({ ...inScope(scope), dimension: { $exists: false } }, { $set: { dimension } });
        checkDimension((await bases.findOne(inScope(scope)))?.dimension, dimension, "an embedding of these chunks");
      }

      // 1. The new generation is named stale before anything of it is written: a crash from here on leaves it to sweep.
      const generation = newId();
      const asset = (await assets.findOneAndUpdate(
        { ...inScope(scope), bucketId, path },
        {
          $addToSet: { stale: generation },
          $setOnInsert: { _id: newId(), ...inScope(scope), bucketId, path, chunkCount: 0, termCount: 0 },
        },
        { upsert: true, returnDocument: "after" },
      ))!;

      // 2. Its chunks, postings in each, which no search sees yet.
      let termCount = 0;
      const chunkDocs = newChunks.map(({ text, position, embedding }): ChunkDoc => {
        const frequencies = termFrequencies(text);
        const length = [...frequencies.values()].reduce((sum, n) => sum + n, 0);
        termCount += length;
        return {
          _id: newId(),
          ...inScope(scope),
          generation,
          bucketId,
          path,
          position,
          text,
          ...(embedding ? { embedding: new Binary(vectorBytesCopy(embedding)) } : {}),
          terms: [...frequencies.keys()],
          frequencies: [...frequencies.values()],
          length,
        };
      });
      await insertInBatches(chunks, chunkDocs);

      // 3. The switch: one document, so searches see the old set until here and the new one after.
      const replaced = asset.generation;
      const stale = [...asset.stale.filter((named) => named !== generation), ...(replaced ? [replaced] : [])];
      const switched = await assets.findOneAndUpdate(
        { _id: asset._id, generation: replaced ?? { $exists: false } },
        {
          $set: { generation, version, chunkCount: newChunks.length, termCount, indexedAt: at, stale },
        },
        { returnDocument: "after" },
      );
      if (!switched) throw new Error(`the asset ${bucketId}/${path} was replaced by another call meanwhile`);

      // 4. The old set, which no search sees any more.
      await deleteStale(scope, switched);
    },

    async removeAsset(scope, { bucketId, path }) {
      const asset = await assets.findOne({ ...inScope(scope), bucketId, path });
      if (!asset) return false;
      const indexed = asset.generation !== undefined;
      if (indexed) {
        // Out of searches first (one document), then its chunks, then the record.
        const unset = await assets.findOneAndUpdate(
          { _id: asset._id, generation: asset.generation },
          {
            $unset: { generation: "", version: "", indexedAt: "" },
            $set: { chunkCount: 0, termCount: 0, stale: [...asset.stale, asset.generation!] },
          },
          { returnDocument: "after" },
        );
        if (!unset) throw new Error(`the asset ${bucketId}/${path} was replaced by another call meanwhile`);
        await deleteStale(scope, unset);
      } else await deleteStale(scope, asset);
      await assets.deleteOne({ _id: asset._id, generation: { $exists: false } });
      return indexed;
    },

    indexedAssets: async (scope) =>
      (
        await assets
          .find({ ...inScope(scope), generation: { $exists: true } })
          .sort({ bucketId: 1, path: 1 })
          .toArray()
      ).map((doc) => ({
        bucketId: doc.bucketId,
        path: doc.path,
        version: doc.version!,
        chunkCount: doc.chunkCount,
        indexedAt: doc.indexedAt!,
      })),

    async removeKnowledgeBase(scope) {
      // The assets first: with them go the generations searches see. A crash after leaves chunks no search sees,
      // which the next call (the knowledge base's deletion is retried until it is done) deletes.
      await assets.deleteMany(inScope(scope));
      await chunks.deleteMany(inScope(scope));
      await bases.deleteMany(inScope(scope));
    },

    countChunks: async (scope) => (await current(scope)).corpus.chunkCount,

    async sweep(scope) {
      const left = await assets
        .find({ ...inScope(scope), $or: [{ "stale.0": { $exists: true } }, { generation: { $exists: false } }] })
        .toArray();
      for (const asset of left) {
        await deleteStale(scope, asset);
        if (asset.generation === undefined) await assets.deleteOne({ _id: asset._id, generation: { $exists: false } });
      }
    },

    async keywordSearch(scope, query, limit) {
      const queryTerms = queryWordsOf(query).map(({ term }) => term);
      if (queryTerms.length === 0 || limit <= 0) return [];
      const { generations, corpus } = await current(scope);
      if (corpus.chunkCount === 0) return [];
      // Document frequencies first (counted up to what shows a term floored), then the terms worth scoring (bm25.ts).
      const currentChunks = { ...inScope(scope), generation: { $in: [...generations] } };
      const counted = await Promise.all(
        queryTerms.map(async (term) => ({
          term,
          matching: await chunks.countDocuments(
            { ...currentChunks, terms: term },
            { limit: flooredAt(corpus.chunkCount) },
          ),
        })),
      );
      const scored = termsWorthScoring(counted, corpus.chunkCount);
      if (scored.length === 0) return [];
      const idf = new Map(counted.map(({ term, matching }) => [term, inverseDocumentFrequency(corpus, matching)]));
      const scores = new Map<string, number>();
      const found = chunks.find(
        { ...currentChunks, terms: { $in: scored } },
        { projection: { terms: 1, frequencies: 1, length: 1 } },
      );
      for await (const doc of found) {
        let score = 0;
        for (const term of scored) {
          const at = doc.terms.indexOf(term);
          if (at >= 0) score += termScore(corpus, idf.get(term)!, doc.frequencies[at]!, doc.length);
        }
        scores.set(doc._id, score);
      }
      const best = bestOf<string>(limit);
      for (const [chunkId, score] of scores) best.offer(chunkId, score);
      return ranked(scope, best.best());
    },

    async vectorSearch(scope, vector, limit) {
      const base = await bases.findOne(inScope(scope));
      if (base?.dimension === undefined || limit <= 0) return [];
      checkDimension(base.dimension, vector.length, "the query's embedding");
      const { generations } = await current(scope);
      const queryLength = lengthOf(vector);
      const best = bestOf<string>(limit);
      const cursor = chunks.find(
        { ...inScope(scope), embedding: { $exists: true } },
        { projection: { generation: 1, embedding: 1 } },
      );
      for await (const doc of cursor) {
        if (generations.has(doc.generation)) best.offer(doc._id, cosineOf(vector, queryLength, doc.embedding!.buffer));
      }
      return ranked(scope, best.best());
    },
  };
}

/** A vector's bytes in a buffer of their own (a Binary keeps the buffer it is given, offset and all). */
const vectorBytesCopy = (vector: Float32Array): Uint8Array =>
  new Uint8Array(vector.buffer.slice(vector.byteOffset, vector.byteOffset + vector.byteLength));
