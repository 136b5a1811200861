import { openChunkIndex } from "@loom/knowledge/index/open";
import { startStack } from "@loom/test-stacks/in-process-stack";
import { apiClient } from "@loom/testing/http";
import type { RetrievalCorpus } from "@loom/testing/retrieval/corpus";
import type { Ranking } from "@loom/testing/retrieval/scoring";
import { embed } from "./knowledge-baselines.ts";
import { corpusDocumentId, indexCorpus } from "./knowledge-corpus-index.ts";
import type { LocalEmbeddings, RetrievalSubjects } from "./knowledge-retrieval.ts";

/** How many chunks a ranking asks for: enough for the first 10 documents MRR reads, most of the time. */
const count = 30;

/**
 * The knowledge service's searches over the corpus, through its HTTP query endpoint on an in-process stack on
 * SQLite: a knowledge base without an embedding model (keyword search) and one with the local model (fused).
 * Vector search alone has no endpoint (a knowledge base with a model is always searched both ways), so it is
 * asked of the same index through its port. The corpus goes in through the index's port with the service's own
 * chunker (bench/knowledge-corpus-index.ts) until ingest jobs fill it from files.
 */
export async function queryEndpointSubjects(
  corpus: RetrievalCorpus,
  embeddings: LocalEmbeddings | undefined,
): Promise<RetrievalSubjects> {
  const index = await openChunkIndex({ db: "bench_knowledge" });
  const model = embeddings && `openai-compatible:${embeddings.model}`;
  const stack = await startStack("sqlite", {
    knowledge: model ? { EMBEDDING_MODELS: model, OPENAI_COMPATIBLE_BASE_URL: embeddings.url } : {},
    inject: { knowledge: { index } },
  });
  const admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
  const organizationId = (await admin.get("/users")).body.users[0].organizations[0] as string;
  const knowledgeBase = async (embeddingModel: string | null) => {
    const id = (
      await admin.post("/knowledge-bases", {
        name: "corpus",
        config: { gtc_pg_vector: { embedding_model: embeddingModel } },
      })
    ).body.knowledge_base_id as string;
    return { id, scope: { organizationId, knowledgeBaseId: id } };
  };
  const byQuery =
    (id: string): Ranking =>
    async (question) => {
      const res = await admin.post(`/knowledge-bases/${id}/query`, { query: question, query_args: { count } });
      if (res.status !== 200) throw new Error(`query: ${res.status} ${JSON.stringify(res.body)}`);
      return (res.body.entries as Array<{ meta: { artifact: string } }>).map((e) =>
        corpusDocumentId(JSON.parse(e.meta.artifact).name),
      );
    };

  const keyword = await knowledgeBase(null);
  const started = performance.now();
  const { chunks } = await indexCorpus(index, keyword.scope, corpus.documents);
  console.log(
    `Loom (SQLite): ${chunks} chunks indexed for keywords in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  const subjects: RetrievalSubjects["subjects"] = [
    { group: "Loom (SQLite)", search: "keyword", rank: byQuery(keyword.id) },
  ];
  if (embeddings && model) {
    const hybrid = await knowledgeBase(model);
    const at = performance.now();
    await indexCorpus(index, hybrid.scope, corpus.documents, embeddings);
    console.log(
      `Loom (SQLite): the same chunks embedded and indexed in ${((performance.now() - at) / 1000).toFixed(1)} s`,
    );
    subjects.push(
      {
        group: "Loom (SQLite)",
        search: "vector",
        rank: async (question) => {
          const [vector] = await embed(embeddings.url, embeddings.model, [question]);
          return (await index.vectorSearch(hybrid.scope, vector!, count)).map((hit) =>
            corpusDocumentId(hit.chunk.path),
          );
        },
      },
      { group: "Loom (SQLite)", search: "fused", rank: byQuery(hybrid.id) },
    );
  }
  return { subjects, close: () => stack.close() };
}
