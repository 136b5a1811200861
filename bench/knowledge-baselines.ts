import type { RetrievalCorpus } from "@loom/testing/retrieval/corpus";
import type { Ranking } from "@loom/testing/retrieval/scoring";
import { terms } from "@loom/testing/retrieval/terms";

/**
 * Baselines for the retrieval-quality bench that need none of the knowledge
 * service: what its keyword, vector and fused searches should at least match.
 * Written here, not taken from the service, so that a fault in the service's
 * index cannot move its own yardstick.
 */

/** Documents ranked per question: enough for recall@5 and an MRR that sees past the fifth place. */
const ranked = 10;

/** A document's paragraphs as plain text: tags dropped, split at blank lines (and HTML block ends), short lines skipped. */
export function paragraphs(content: string): string[] {
  return content
    .replace(/<\/(p|h\d|li|nav|footer|title)>/g, "\n\n")
    .replace(/<[^>]+>/g, "")
    .split(/\n\s*\n/)
    .map((paragraph) => paragraph.replace(/\s+/g, " ").trim())
    .filter((paragraph) => paragraph.length >= 20);
}

/** Okapi BM25 (k1 1.2, b 0.75) over whole documents, with the corpus checks' words: the naive keyword baseline. */
export function keywordBaseline(corpus: RetrievalCorpus): Ranking {
  const documents = corpus.documents.map((doc) => {
    const counts = new Map<string, number>();
    for (const term of terms(paragraphs(doc.content).join(" "))) counts.set(term, (counts.get(term) ?? 0) + 1);
    const length = [...counts.values()].reduce((sum, n) => sum + n, 0);
    return { id: doc.id, counts, length };
  });
  const averageLength = documents.reduce((sum, doc) => sum + doc.length, 0) / documents.length;
  const frequency = new Map<string, number>();
  for (const doc of documents)
    for (const term of doc.counts.keys()) frequency.set(term, (frequency.get(term) ?? 0) + 1);
  const idf = (term: string) => {
    const n = frequency.get(term) ?? 0;
    return Math.log(1 + (documents.length - n + 0.5) / (n + 0.5));
  };
  return async (question) => {
    const asked = [...new Set(terms(question))];
    return documents
      .map((doc) => ({
        id: doc.id,
        score: asked.reduce((sum, term) => {
          const tf = doc.counts.get(term) ?? 0;
          return sum + (idf(term) * tf * 2.2) / (tf + 1.2 * (0.25 + (0.75 * doc.length) / averageLength));
        }, 0),
      }))
      .filter((doc) => doc.score > 0)
      .sort((a, b) => b.score - a.score)
      .slice(0, ranked)
      .map((doc) => doc.id);
  };
}

/** Vectors from an OpenAI-compatible endpoint (`baseUrl` ends in /v1), in batches. */
export async function embed(baseUrl: string, model: string, texts: string[], batch = 64): Promise<Float32Array[]> {
  const vectors: Float32Array[] = [];
  for (let start = 0; start < texts.length; start += batch) {
    const response = await fetch(`${baseUrl}/embeddings`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model, input: texts.slice(start, start + batch) }),
    });
    if (!response.ok) throw new Error(`embeddings: ${response.status} ${await response.text()}`);
    const body = (await response.json()) as { data: Array<{ embedding: number[] }> };
    vectors.push(...body.data.map((d) => Float32Array.from(d.embedding)));
  }
  return vectors;
}

/**
 * An exact cosine scan over the embeddings of every paragraph of the corpus
 * (the vectors are unit length: the dot product is the cosine), paragraphs
 * mapped to their documents: the brute-force vector baseline.
 */
export async function exactCosineBaseline(
  corpus: RetrievalCorpus,
  embeddings: { url: string; model: string },
): Promise<{ rank: Ranking; paragraphs: number; embedSeconds: number }> {
  const passages = corpus.documents.flatMap((doc) => paragraphs(doc.content).map((text) => ({ docId: doc.id, text })));
  const started = performance.now();
  const vectors = await embed(
    embeddings.url,
    embeddings.model,
    passages.map((p) => p.text),
  );
  const embedSeconds = (performance.now() - started) / 1000;
  const rank: Ranking = async (question) => {
    const [query] = await embed(embeddings.url, embeddings.model, [question]);
    const scores = vectors.map((vector, i) => {
      let dot = 0;
      for (let d = 0; d < vector.length; d++) dot += vector[d]! * query![d]!;
      return { docId: passages[i]!.docId, dot };
    });
    scores.sort((a, b) => b.dot - a.dot);
    return [...new Set(scores.map((s) => s.docId))].slice(0, ranked);
  };
  return { rank, paragraphs: passages.length, embedSeconds };
}

/** Reciprocal rank fusion (k = 60) of several rankings: the fused baseline. */
export function fusedBaseline(...rankings: Ranking[]): Ranking {
  return async (question) => {
    const scores = new Map<string, number>();
    for (const rank of rankings)
      (await rank(question)).forEach((docId, i) => scores.set(docId, (scores.get(docId) ?? 0) + 1 / (60 + i + 1)));
    return [...scores.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, ranked)
      .map(([docId]) => docId);
  };
}
