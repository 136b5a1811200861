import type { StoreLifecycle } from "@loom/store/open";

/** One knowledge base of one organization: every call of the index is inside one, and sees nothing outside it. */
export interface KnowledgeScope {
  organizationId: string;
  knowledgeBaseId: string;
}

/** A file the knowledge base is fed from: an asset of a bucket. */
export interface AssetKey {
  bucketId: string;
  path: string;
}

/** Where a chunk sits in its asset. */
export interface ChunkPosition {
  /** Its place among the asset's chunks, from 0. */
  index: number;
  /** Offsets of its text in the asset's extracted text (start inclusive, end exclusive), when the chunker gives them. */
  start?: number;
  end?: number;
  /** The headings it sits under, outermost first, when the document has structure. */
  headings?: string[];
}

/** A chunk as ingest hands it to the index. */
export interface NewChunk {
  text: string;
  position: ChunkPosition;
  /** Its embedding, when the knowledge base has an embedding model: one dimension for the whole knowledge base. */
  embedding?: Float32Array;
}

/** A chunk as the index keeps it. */
export interface IndexedChunk extends NewChunk, AssetKey {
  id: string;
}

/** An asset's place in the index: what incremental ingest compares with the bucket to skip, replace or remove it. */
export interface IndexedAsset extends AssetKey {
  /** What ingest says the indexed content was (an etag, an update time, a content hash): opaque to the index. */
  version: string;
  chunkCount: number;
  indexedAt: Date;
}

/** A chunk found by one kind of search, best first. */
export interface RankedChunk {
  chunk: IndexedChunk;
  /**
   * Keyword search: the chunk's BM25 score in its knowledge base (k1 = 1.2, b = 0.75; positive, higher is better,
   * not bounded: it grows with how rare the matched terms are). Vector search: the cosine similarity of the chunk's
   * embedding and the query's, in [-1, 1].
   */
  score: number;
}

/**
 * The chunk index of the knowledge service: the chunks of every knowledge base, searchable by keywords (BM25)
 * always and by embeddings when they have them. Each asset's chunks are replaced as one: a search sees the old
 * set or the new one, never a mixture, whatever moment a crash comes (docs/decisions.md, "Knowledge index").
 */
export interface ChunkIndex extends StoreLifecycle {
  /**
   * Makes `chunks` the asset's chunks at `version`, in place of any it had (none: the asset is kept, with its
   * version and no chunks, so that ingest skips it while it is unchanged). Embeddings
   * must all have the dimension of the knowledge base's others: failedPrecondition otherwise, and nothing changes.
   */
  replaceAsset(
    scope: KnowledgeScope,
    asset: AssetKey & { version: string },
    chunks: readonly NewChunk[],
    at: Date,
  ): Promise<void>;
  /** Removes the asset's chunks; whether it had been indexed. */
  removeAsset(scope: KnowledgeScope, asset: AssetKey): Promise<boolean>;
  /** Every indexed asset of the knowledge base with its version, in bucket and path order. */
  indexedAssets(scope: KnowledgeScope): Promise<IndexedAsset[]>;
  /**
   * Removes every chunk and asset of the knowledge base. Idempotent, and a removal a crash interrupted is finished by
   * the next call: the knowledge base's owner calls it before it forgets the knowledge base, and again on a retry.
   */
  removeKnowledgeBase(scope: KnowledgeScope): Promise<void>;
  /** How many chunks the knowledge base has (its limit counts them). */
  countChunks(scope: KnowledgeScope): Promise<number>;
  /**
   * Clears what an interrupted replace or removal left behind (chunks no search sees); idempotent. Ingest calls it
   * before a job's first asset, never while a replacement in the same knowledge base runs (it would clear the
   * replacement's chunks before they are switched in).
   */
  sweep(scope: KnowledgeScope): Promise<void>;
  /**
   * The `limit` chunks that best match `query` by BM25, best first. Any text is a query: it is split into words,
   * and a chunk matches when it has any of them; none of the text is search syntax.
   */
  keywordSearch(scope: KnowledgeScope, query: string, limit: number): Promise<RankedChunk[]>;
  /**
   * The `limit` chunks whose embeddings are nearest `vector` by cosine similarity, best first (exact, not
   * approximate); none when the knowledge base has no embeddings. failedPrecondition when `vector` has another
   * dimension than theirs.
   */
  vectorSearch(scope: KnowledgeScope, vector: Float32Array, limit: number): Promise<RankedChunk[]>;
}
