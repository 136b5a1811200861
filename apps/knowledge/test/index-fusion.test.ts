import { describe, expect, it } from "vitest";
import { fuseRankings } from "../src/index/fusion.ts";
import type { IndexedChunk, RankedChunk } from "../src/index/port.ts";

const chunk = (id: string): IndexedChunk => ({ id, bucketId: "b", path: `${id}.md`, text: id, position: { index: 0 } });
const ranking = (...ids: string[]): RankedChunk[] => ids.map((id, at) => ({ chunk: chunk(id), score: 10 - at }));
/** The most a chunk earns: first in both lists (k = 1; keyword weighs 1, vector 1.5). */
const best = (1 + 1.5) / 2;

describe("weighted reciprocal rank fusion of the keyword and vector rankings", () => {
  it("puts a chunk both searches rank well above one only a single search ranks first, vector's first above keyword's", () => {
    const fused = fuseRankings(ranking("keyword-only", "both"), ranking("vector-only", "both"), 3);
    expect(fused.map((hit) => hit.chunk.id)).toEqual(["both", "vector-only", "keyword-only"]);
    expect(fused[0]).toEqual({
      chunk: chunk("both"),
      score: expect.closeTo((1 / 3 + 1.5 / 3) / best, 9),
      keyword: { rank: 2, score: 9 },
      vector: { rank: 2, score: 9 },
    });
    expect(fused[1]).toEqual({
      chunk: chunk("vector-only"),
      score: expect.closeTo(0.75 / best, 9),
      vector: { rank: 1, score: 10 },
    });
    expect(fused[2]).toEqual({
      chunk: chunk("keyword-only"),
      score: expect.closeTo(0.5 / best, 9),
      keyword: { rank: 1, score: 10 },
    });
  });

  it("gives 1 to a chunk first in both, and keeps to the limit", () => {
    const fused = fuseRankings(ranking("a", "b", "c"), ranking("a", "c", "b"), 2);
    expect(fused.map((hit) => [hit.chunk.id, hit.score])).toEqual([
      ["a", 1],
      ["c", expect.closeTo((1 / 4 + 1.5 / 3) / best, 9)],
    ]);
  });
});
