/**
 * Okapi BM25 exactly as SQLite's FTS5 computes `bm25()` (k1 = 1.2, b = 0.75, and an IDF that never falls below
 * 1e-6 for terms in more than half the chunks), but positive: higher is better. The MongoDB index scores with it,
 * so a knowledge base ranks the same on either store.
 */
const k1 = 1.2;
const b = 0.75;

/** What BM25 needs to know of the knowledge base: how many chunks it has and their mean length in terms. */
export interface CorpusStatistics {
  chunkCount: number;
  averageLength: number;
}

/** The inverse document frequency of a term found in `matching` of the corpus's chunks. */
export function inverseDocumentFrequency(corpus: CorpusStatistics, matching: number): number {
  const idf = Math.log((corpus.chunkCount - matching + 0.5) / (matching + 0.5));
  return idf > 0 ? idf : 1e-6;
}

/** One term's part of a chunk's score: it occurs `frequency` times in a chunk of `length` terms. */
export function termScore(corpus: CorpusStatistics, idf: number, frequency: number, length: number): number {
  const norm = corpus.averageLength > 0 ? length / corpus.averageLength : 1;
  return (idf * (frequency * (k1 + 1))) / (frequency + k1 * (1 - b + b * norm));
}
