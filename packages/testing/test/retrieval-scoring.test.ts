import { describe, expect, it } from "vitest";
import type { LabelledQuestion } from "../src/retrieval/corpus.ts";
import { placeOf, scoreRetrieval, summarise } from "../src/retrieval/scoring.ts";

const question = (id: string, kind: LabelledQuestion["kind"], docId: string): LabelledQuestion => ({
  id,
  kind,
  question: id,
  docId,
  passage: "",
  answer: "",
});

describe("retrieval scoring", () => {
  it("places a document by its first hit among distinct documents (chunk hits repeat their document)", () => {
    expect(placeOf("b", ["a", "a", "b", "a", "c"])).toBe(2);
    expect(placeOf("a", ["a"])).toBe(1);
    expect(placeOf("z", ["a", "b"])).toBeNull();
    expect(placeOf("z", [])).toBeNull();
  });

  it("computes recall@5 and MRR", () => {
    // Places 1, 2, 5, 6 and not ranked: 3 of 5 within the first five; MRR (1 + 1/2 + 1/5 + 1/6 + 0) / 5.
    const scores = summarise([1, 2, 5, 6, null]);
    expect(scores.questions).toBe(5);
    expect(scores.recallAt5).toBeCloseTo(3 / 5, 10);
    expect(scores.mrr).toBeCloseTo((1 + 1 / 2 + 1 / 5 + 1 / 6) / 5, 10);
    expect(summarise([])).toEqual({ questions: 0, recallAt5: 0, mrr: 0 });
  });

  it("scores a ranking over all the questions and per kind", async () => {
    const questions = [
      question("q1", "rare-term", "d1"),
      question("q2", "rare-term", "d2"),
      question("q3", "paraphrase", "d3"),
      question("q4", "paraphrase", "d4"),
    ];
    const rankings: Record<string, string[]> = {
      q1: ["d1", "d9"],
      q2: ["d9", "d9", "d8", "d2"],
      q3: ["d5", "d6", "d7", "d8", "d9", "d3"],
      q4: [],
    };
    const scores = await scoreRetrieval(questions, async (text) => rankings[text]!);
    expect(scores.places).toEqual([
      { questionId: "q1", kind: "rare-term", place: 1 },
      { questionId: "q2", kind: "rare-term", place: 3 },
      { questionId: "q3", kind: "paraphrase", place: 6 },
      { questionId: "q4", kind: "paraphrase", place: null },
    ]);
    expect(scores.recallAt5).toBeCloseTo(2 / 4, 10);
    expect(scores.mrr).toBeCloseTo((1 + 1 / 3 + 1 / 6) / 4, 10);
    expect(scores.byKind["rare-term"]).toEqual({ questions: 2, recallAt5: 1, mrr: (1 + 1 / 3) / 2 });
    expect(scores.byKind.paraphrase.recallAt5).toBe(0);
    expect(scores.byKind.paraphrase.mrr).toBeCloseTo(1 / 12, 10);
  });
});
