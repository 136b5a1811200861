import { type FusedChunk, fuseRankings } from "./fusion.ts";
import type { ChunkIndex, KnowledgeScope, RankedChunk } from "./port.ts";

/** How many of each search's best chunks are fused: deeper than the answer, so a chunk second in both can win. */
export const fusionDepth = (limit: number): number => Math.max(limit * 4, 40);

export interface ChunkSearch {
  query: string;
  /** The query's embedding by the knowledge base's model, when it has one. */
  embedding?: Float32Array;
  limit: number;
}

/**
 * What a search found. `keyword`: BM25 alone (no embedding, or the knowledge base has none yet): each chunk's
 * `score` is its BM25 score. `hybrid`: keyword and vector rankings fused, `score` the normalized fusion score
 * (fusion.ts); each chunk also carries its place and score in each search.
 */
export interface ChunkSearchResult {
  mode: "keyword" | "hybrid";
  chunks: FusedChunk[];
}

/** A keyword ranking as a search's result: each chunk's score is its BM25 score. */
const keywordOnly = (keyword: readonly RankedChunk[], limit: number): ChunkSearchResult => ({
  mode: "keyword",
  chunks: keyword.slice(0, limit).map(({ chunk, score }, at) => ({ chunk, score, keyword: { rank: at + 1, score } })),
});

/** Searches a knowledge base's chunks: by keywords always, fused with vector search when there is an embedding. */
export async function searchChunks(
  index: ChunkIndex,
  scope: KnowledgeScope,
  { query, embedding, limit }: ChunkSearch,
): Promise<ChunkSearchResult> {
  if (!embedding) return keywordOnly(await index.keywordSearch(scope, query, limit), limit);
  const depth = fusionDepth(limit);
  const [keyword, vector] = await Promise.all([
    index.keywordSearch(scope, query, depth),
    index.vectorSearch(scope, embedding, depth),
  ]);
  // The knowledge base has no embeddings (yet): nothing to fuse.
  if (vector.length === 0) return keywordOnly(keyword, limit);
  return { mode: "hybrid", chunks: fuseRankings(keyword, vector, limit) };
}
