import { describe, expect, it } from "vitest";
import { bulkDocuments, retrievalCorpus } from "../src/retrieval/corpus.ts";
import { documentFrequencies, terms } from "../src/retrieval/terms.ts";

const corpus = retrievalCorpus();
const byId = new Map(corpus.documents.map((doc) => [doc.id, doc]));
const frequencies = documentFrequencies(corpus.documents.map((doc) => doc.content));
/** Words of the question that its document holds too, with the number of documents holding each. */
const shared = (question: string, docId: string) => {
  const inDocument = new Set(terms(byId.get(docId)!.content));
  return [...new Set(terms(question))].filter((term) => inDocument.has(term)).map((term) => frequencies.get(term)!);
};

describe("retrieval corpus", () => {
  it("is the same for the same seed, and another for another seed", () => {
    expect(retrievalCorpus()).toEqual(corpus);
    expect(retrievalCorpus(36).documents.map((doc) => doc.content)).not.toEqual(corpus.documents.map((d) => d.content));
  });

  it("has at least 200 documents in Markdown, HTML and plain text, with unique ids", () => {
    expect(corpus.documents.length).toBeGreaterThanOrEqual(200);
    expect(byId.size).toBe(corpus.documents.length);
    const kinds = Object.groupBy(corpus.documents, (doc) => doc.mediaType);
    for (const type of ["text/markdown", "text/html", "text/plain"] as const)
      expect(kinds[type]?.length).toBeGreaterThanOrEqual(40);
  });

  it("has at least 50 questions of each kind, each answered by a passage found in its document only", () => {
    const kinds = Object.groupBy(corpus.questions, (q) => q.kind);
    expect(kinds["rare-term"]?.length).toBeGreaterThanOrEqual(50);
    expect(kinds.paraphrase?.length).toBeGreaterThanOrEqual(40);
    expect(new Set(corpus.questions.map((q) => q.id)).size).toBe(corpus.questions.length);
    for (const q of corpus.questions) {
      expect(q.passage, q.id).toContain(q.answer);
      expect(q.passage, q.id).not.toMatch(/[\n<>*_]/);
      expect(
        corpus.documents.filter((doc) => doc.content.includes(q.passage)).map((doc) => doc.id),
        q.id,
      ).toEqual([q.docId]);
      expect(q.question, q.id).not.toContain(q.answer);
    }
  });

  it("labels by measure: a rare-term question shares a word held by at most 2% of the documents with its document, a paraphrase none held by up to 10%", () => {
    const rare = Math.floor(corpus.documents.length * 0.02);
    const uncommon = Math.floor(corpus.documents.length * 0.1);
    for (const q of corpus.questions) {
      const counts = shared(q.question, q.docId);
      if (q.kind === "rare-term") expect(Math.min(...counts), `${q.id}: ${q.question}`).toBeLessThanOrEqual(rare);
      else
        expect(
          counts.filter((count) => count <= uncommon),
          `${q.id}: ${q.question}`,
        ).toEqual([]);
    }
  });

  it("also gives documents in bulk, the same for the same seed: 1,000 of them about a megabyte, in all three formats", () => {
    const bulk = [...bulkDocuments(1000)];
    expect(bulk).toEqual([...bulkDocuments(1000)]);
    expect(new Set(bulk.map((doc) => doc.id)).size).toBe(1000);
    const bytes = bulk.reduce((sum, doc) => sum + Buffer.byteLength(doc.content), 0);
    expect(bytes).toBeGreaterThan(800_000);
    expect(bytes).toBeLessThan(1_600_000);
    expect(new Set(bulk.map((doc) => doc.mediaType))).toEqual(new Set(["text/markdown", "text/html", "text/plain"]));
  });
});
