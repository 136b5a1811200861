import type { LabelledQuestion, QuestionKind } from "./corpus.ts";

/**
 * Retrieval quality over labelled questions (docs/decisions.md, "Measuring
 * retrieval"). A ranking answers a question with document ids, best first;
 * chunk hits map to their documents and repeat: only a document's first place
 * counts. recall@k: the share of questions whose document is among the first
 * k distinct documents. MRR: the mean of 1 / (the document's place), 0 when it
 * is not ranked at all.
 */
export type Ranking = (question: string) => Promise<string[]>;

export interface Scores {
  questions: number;
  recallAt5: number;
  mrr: number;
}

export interface RetrievalScores extends Scores {
  byKind: Record<QuestionKind, Scores>;
  /** Each question's place of its document (1-based), or null when it was not ranked. */
  places: Array<{ questionId: string; kind: QuestionKind; place: number | null }>;
}

/** The 1-based place of `docId` among the distinct ids of `ranked`, or null. */
export function placeOf(docId: string, ranked: readonly string[]): number | null {
  const distinct = [...new Set(ranked)];
  const index = distinct.indexOf(docId);
  return index === -1 ? null : index + 1;
}

export function summarise(places: ReadonlyArray<number | null>, k = 5): Scores {
  const count = places.length;
  if (count === 0) return { questions: 0, recallAt5: 0, mrr: 0 };
  const found = places.filter((place) => place !== null && place <= k).length;
  const reciprocal = places.reduce<number>((sum, place) => sum + (place === null ? 0 : 1 / place), 0);
  return { questions: count, recallAt5: found / count, mrr: reciprocal / count };
}

/** Asks every question in turn (one at a time: latency is not what is measured here) and scores the rankings. */
export async function scoreRetrieval(questions: readonly LabelledQuestion[], rank: Ranking): Promise<RetrievalScores> {
  const places: RetrievalScores["places"] = [];
  for (const question of questions)
    places.push({
      questionId: question.id,
      kind: question.kind,
      place: placeOf(question.docId, await rank(question.question)),
    });
  const of = (kind: QuestionKind) => summarise(places.filter((p) => p.kind === kind).map((p) => p.place));
  return {
    ...summarise(places.map((p) => p.place)),
    byKind: { "rare-term": of("rare-term"), paraphrase: of("paraphrase") },
    places,
  };
}
