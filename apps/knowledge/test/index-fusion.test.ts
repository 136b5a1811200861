import { describe, expect, it } from "vitest";
import { fuseRankings } from "../src/index/fusion.ts";
import type { IndexedChunk, RankedChunk } from "../src/index/port.ts";

const chunk = (id: string): IndexedChunk => ({ id, bucketId: "b", path: `${id}.md`, text: id, position: { index: 0 } });
const ranking = (...ids: string[]): RankedChunk[] => ids.map((id, at) => ({ chunk: chunk(id), score: 10 - at }));

describe("reciprocal rank fusion of the keyword and vector rankings", () => {
  it("puts a chunk both searches rank well above one only a single search ranks first", () => {
    const fused = fuseRankings(ranking("keyword-only", "both"), ranking("vector-only", "both"), 3);
    expect(fused.map((hit) => hit.chunk.id)).toEqual(["both", "keyword-only", "vector-only"]);
    expect(fused[0]).toEqual({
      chunk: chunk("both"),
      score: expect.closeTo(2 / 62 / (2 / 61), 9),
      keyword: { rank: 2, score: 9 },
      vector: { rank: 2, score: 9 },
    });
    // One list's first place only: half of what first in both would earn.
    expect(fused[1]).toEqual({
      chunk: chunk("keyword-only"),
      score: expect.closeTo(0.5, 9),
      keyword: { rank: 1, score: 10 },
    });
  });

  it("gives 1 to a chunk first in both, and keeps to the limit", () => {
    const fused = fuseRankings(ranking("a", "b", "c"), ranking("a", "c", "b"), 2);
    expect(fused.map((hit) => [hit.chunk.id, hit.score])).toEqual([
      ["a", 1],
      ["b", expect.closeTo((1 / 62 + 1 / 63) / (2 / 61), 9)],
    ]);
  });
});
