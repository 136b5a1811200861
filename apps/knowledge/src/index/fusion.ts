import type { IndexedChunk, RankedChunk } from "./port.ts";

/**
 * Reciprocal rank fusion's constant (Cormack, Clarke and Büttcher, 2009): a chunk at rank r of a list earns
 * 1 / (k + r). 60 is the paper's, and keeps one list's first place from outweighing agreement of both lists.
 */
export const fusionConstant = 60;

/** A chunk's rank (from 1) and score in one kind of search. */
export interface Placing {
  rank: number;
  score: number;
}

/** A chunk of a fused ranking, with where each kind of search placed it (absent: not in its first results). */
export interface FusedChunk {
  chunk: IndexedChunk;
  /**
   * Its reciprocal rank fusion score over the lists fused, divided by the most a chunk can earn (first in every
   * list): in (0, 1], 1 for a chunk both searches put first.
   */
  score: number;
  keyword?: Placing;
  vector?: Placing;
}

/**
 * Fuses a keyword ranking and a vector ranking into one by reciprocal rank fusion: ranks, not scores, are summed,
 * because BM25 scores (unbounded, scaled by term rarity) and cosine similarities have no common scale. Ties keep
 * the keyword ranking's order, then the vector ranking's.
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
      entry.sum += 1 / (fusionConstant + at + 1);
      fused.set(chunk.id, entry);
    });
  add(keyword, "keyword");
  add(vector, "vector");
  const best = 2 / (fusionConstant + 1);
  return [...fused.values()]
    .sort((a, b) => b.sum - a.sum || a.order - b.order)
    .slice(0, limit)
    .map(({ sum, order: _order, ...entry }) => ({ ...entry, score: sum / best }));
}
