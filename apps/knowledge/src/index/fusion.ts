import type { IndexedChunk, RankedChunk } from "./port.ts";

/**
 * Weighted reciprocal rank fusion: a chunk at rank r of a list earns weight / (k + r). Chosen on the project's
 * labelled corpus through the index (docs/decisions.md, "Querying knowledge bases"): plain RRF (k = 60, equal
 * weights) fell below vector search alone there, because at k = 60 a list's 40th place earns two thirds of its
 * first, so the keyword list's noise on a question asked by meaning weighs as much as the vector list's answer.
 * A small k makes first places count (both lists' tails are mostly noise), and the vector list weighs more: on a
 * question that shares a rare word with its answer the vector list usually places it high too, while on one asked
 * by meaning the keyword list has nothing to say.
 */
export const fusionConstant = 1;
/** What each list's places are worth. */
export const fusionWeights = { keyword: 1, vector: 1.5 } as const;

/** A chunk's rank (from 1) and score in one kind of search. */
export interface Placing {
  rank: number;
  score: number;
}

/** A chunk of a fused ranking, with where each kind of search placed it (absent: not in its first results). */
export interface FusedChunk {
  chunk: IndexedChunk;
  /**
   * Its fusion score over the lists fused, divided by the most a chunk can earn (first in every list): in (0, 1],
   * 1 for a chunk both searches put first.
   */
  score: number;
  keyword?: Placing;
  vector?: Placing;
}

/**
 * Fuses a keyword ranking and a vector ranking into one by weighted reciprocal rank fusion: ranks, not scores, are
 * summed, because BM25 scores (unbounded, scaled by term rarity) and cosine similarities have no common scale. Ties
 * keep the keyword ranking's order, then the vector ranking's.
 */
export function fuseRankings(
  keyword: readonly RankedChunk[],
  vector: readonly RankedChunk[],
  limit: number,
): FusedChunk[] {
  const fused = new Map<string, FusedChunk & { sum: number; order: number }>();
  const add = (list: readonly RankedChunk[], kind: "keyword" | "vector") =>
    list.forEach(({ chunk, score }, at) => {
      const entry = fused.get(chunk.id) ?? { chunk, score: 0, sum: 0, order: fused.size };
      entry[kind] = { rank: at + 1, score };
      entry.sum += fusionWeights[kind] / (fusionConstant + at + 1);
      fused.set(chunk.id, entry);
    });
  add(keyword, "keyword");
  add(vector, "vector");
  const best = (fusionWeights.keyword + fusionWeights.vector) / (fusionConstant + 1);
  return [...fused.values()]
    .sort((a, b) => b.sum - a.sum || a.order - b.order)
    .slice(0, limit)
    .map(({ sum, order: _order, ...entry }) => ({ ...entry, score: sum / best }));
}
