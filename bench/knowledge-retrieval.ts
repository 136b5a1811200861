import { localEmbeddingModel, needsOwnServers, type OwnServer, startOwnEmbeddings } from "@loom/testing/own-servers";
import { type RetrievalCorpus, retrievalCorpus } from "@loom/testing/retrieval/corpus";
import { type Ranking, type RetrievalScores, scoreRetrieval } from "@loom/testing/retrieval/scoring";
import { exactCosineBaseline, fusedBaseline, keywordBaseline } from "./knowledge-baselines.ts";
import { printTable } from "./load.ts";

/** One search to score: which (`group`: "baseline", "SQLite", "MongoDB", …) and how (`search`). */
export interface RetrievalSubject {
  group: string;
  search: "keyword" | "vector" | "fused";
  rank: Ranking;
}

/** A group of subjects, and what to stop once they are scored (a stack they query). */
export interface RetrievalSubjects {
  subjects: RetrievalSubject[];
  close(): Promise<void>;
}

/** Where the local embeddings server listens, for subjects that embed (a knowledge base's OpenAI-compatible model). */
export interface LocalEmbeddings {
  url: string;
  model: string;
  dimensions: number;
}

/**
 * Issue 35: retrieval quality, measured. The project's seeded corpus
 * (`@loom/testing/retrieval/corpus`: 240 documents, 128 labelled questions)
 * is ranked by each subject; recall@5 and MRR (over the first 10 documents)
 * overall and per kind of question. The baselines always run: BM25 over whole
 * documents, and — with the local embeddings server (all-MiniLM-L6-v2) — an
 * exact cosine scan over every paragraph's vector and their reciprocal rank
 * fusion. `subjects` adds the knowledge service's keyword, vector and fused
 * searches over the same corpus (it ingests `corpus.documents` as files named
 * by their ids and maps its hits back to those ids). Goals: keyword-only
 * recall@5 ≥ 0.8 on rare-term questions; fused ≥ keyword and ≥ vector.
 */
export async function benchRetrievalQuality(
  options: {
    subjects?: (corpus: RetrievalCorpus, embeddings: LocalEmbeddings | undefined) => Promise<RetrievalSubjects>;
  } = {},
): Promise<void> {
  const corpus = retrievalCorpus();
  const count = (kind: string) => corpus.questions.filter((q) => q.kind === kind).length;
  console.log(
    `\nretrieval quality: ${corpus.documents.length} documents, ${corpus.questions.length} questions ` +
      `(${count("rare-term")} rare-term, ${count("paraphrase")} paraphrase)`,
  );
  let server: OwnServer | undefined;
  let more: RetrievalSubjects | undefined;
  try {
    const keyword = keywordBaseline(corpus);
    const subjects: RetrievalSubject[] = [{ group: "baseline", search: "keyword", rank: keyword }];
    let embeddings: LocalEmbeddings | undefined;
    if (needsOwnServers("retrieval quality with vectors", "embeddings")) {
      server = await startOwnEmbeddings();
      embeddings = { url: server.url, model: localEmbeddingModel.id, dimensions: localEmbeddingModel.dimensions };
      const cosine = await exactCosineBaseline(corpus, embeddings);
      console.log(
        `${embeddings.model}: ${cosine.paragraphs} paragraphs embedded in ${cosine.embedSeconds.toFixed(1)} s ` +
          `(${(cosine.paragraphs / cosine.embedSeconds).toFixed(0)}/s)`,
      );
      subjects.push(
        { group: "baseline", search: "vector", rank: cosine.rank },
        { group: "baseline", search: "fused", rank: fusedBaseline(keyword, cosine.rank) },
      );
    }
    if (options.subjects) {
      more = await options.subjects(corpus, embeddings);
      subjects.push(...more.subjects);
    }

    const scored: Array<RetrievalSubject & { scores: RetrievalScores }> = [];
    for (const subject of subjects)
      scored.push({ ...subject, scores: await scoreRetrieval(corpus.questions, subject.rank) });
    const figure = (n: number) => n.toFixed(3);
    printTable(
      "retrieval quality (recall@5; MRR over the first 10 documents)",
      scored.map(({ group, search, scores }) => ({
        subject: `${group}: ${search}`,
        "recall@5": figure(scores.recallAt5),
        MRR: figure(scores.mrr),
        "rare-term recall@5": figure(scores.byKind["rare-term"].recallAt5),
        "rare-term MRR": figure(scores.byKind["rare-term"].mrr),
        "paraphrase recall@5": figure(scores.byKind.paraphrase.recallAt5),
        "paraphrase MRR": figure(scores.byKind.paraphrase.mrr),
      })),
    );
    for (const group of new Set(scored.map((s) => s.group)))
      console.log(
        goals(
          group,
          scored.filter((s) => s.group === group),
        ),
      );
  } finally {
    await more?.close();
    await server?.close();
  }
}

/** The goals for one group's searches, each said as met or not. */
function goals(group: string, scored: Array<RetrievalSubject & { scores: RetrievalScores }>): string {
  const of = (search: RetrievalSubject["search"]) => scored.find((s) => s.search === search)?.scores;
  const [keyword, vector, fused] = [of("keyword"), of("vector"), of("fused")];
  const lines: string[] = [];
  if (keyword) {
    const rare = keyword.byKind["rare-term"].recallAt5;
    lines.push(`keyword-only rare-term recall@5 ${rare.toFixed(3)} ${rare >= 0.8 ? "≥" : "<"} 0.8`);
  }
  if (fused)
    for (const [name, other] of [
      ["keyword", keyword],
      ["vector", vector],
    ] as const)
      if (other) {
        const met = fused.recallAt5 >= other.recallAt5 && fused.mrr >= other.mrr;
        lines.push(`fused ${met ? "≥" : "not ≥"} ${name} (recall@5 and MRR)`);
      }
  return `${group} goals: ${lines.join("; ") || "none measured"}`;
}
