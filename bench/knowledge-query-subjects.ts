import type { WiredKnowledgeService } from "@loom/knowledge/wiring";
import { startStack } from "@loom/test-stacks/in-process-stack";
import { apiClient } from "@loom/testing/http";
import type { RetrievalCorpus } from "@loom/testing/retrieval/corpus";
import type { Ranking } from "@loom/testing/retrieval/scoring";
import { embed } from "./knowledge-baselines.ts";
import { corpusDocumentId } from "./knowledge-corpus-index.ts";
import { bucketKnowledgeBase, ingestJob, uploadDocuments } from "./knowledge-ingest.ts";
import type { LocalEmbeddings, RetrievalSubjects } from "./knowledge-retrieval.ts";

/** How many chunks a ranking asks for: enough for the first 10 documents MRR reads, most of the time. */
const count = 30;

/**
 * The knowledge service's searches over the corpus, through its HTTP query endpoint on an in-process stack on
 * SQLite, seeded as a user seeds it: the corpus uploaded to a bucket through signed URLs, a knowledge base over
 * the bucket, an ingest job run to SUCCEEDED. One knowledge base without an embedding model (keyword search) and
 * one with the local model (fused). Vector search alone has no endpoint (a knowledge base with a model is always
 * searched both ways), so it is asked of the same index through its port.
 */
export async function queryEndpointSubjects(
  corpus: RetrievalCorpus,
  embeddings: LocalEmbeddings | undefined,
): Promise<RetrievalSubjects> {
  const model = embeddings && `openai-compatible:${embeddings.model}`;
  const stack = await startStack("sqlite", {
    knowledge: model ? { EMBEDDING_MODELS: model, OPENAI_COMPATIBLE_BASE_URL: embeddings.url } : {},
  });
  const index = (stack.wired("knowledge") as WiredKnowledgeService).index;
  const admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
  const organizationId = (await admin.get("/users")).body.users[0].organizations[0] as string;
  const { bucketId, bytes, files } = await uploadDocuments(admin, "corpus", corpus.documents);
  console.log(`Loom (SQLite): ${files} files (${(bytes / 1024).toFixed(0)} KB) uploaded through signed URLs`);
  const byQuery =
    (id: string): Ranking =>
    async (question) => {
      const res = await admin.post(`/knowledge-bases/${id}/query`, { query: question, query_args: { count } });
      if (res.status !== 200) throw new Error(`query: ${res.status} ${JSON.stringify(res.body)}`);
      return (res.body.entries as Array<{ meta: { artifact: string } }>).map((e) =>
        corpusDocumentId(JSON.parse(e.meta.artifact).name),
      );
    };

  const keyword = await bucketKnowledgeBase(admin, bucketId, null);
  const keywordJob = await ingestJob(admin, keyword);
  console.log(`Loom (SQLite): ingest job, keyword-only, SUCCEEDED in ${keywordJob.seconds.toFixed(1)} s`);
  const subjects: RetrievalSubjects["subjects"] = [
    { group: "Loom (SQLite)", search: "keyword", rank: byQuery(keyword) },
  ];
  if (embeddings && model) {
    const hybrid = await bucketKnowledgeBase(admin, bucketId, model);
    const hybridJob = await ingestJob(admin, hybrid, 500);
    console.log(`Loom (SQLite): ingest job with ${embeddings.model} SUCCEEDED in ${hybridJob.seconds.toFixed(1)} s`);
    const hybridScope = { organizationId, knowledgeBaseId: hybrid };
    subjects.push(
      {
        group: "Loom (SQLite)",
        search: "vector",
        rank: async (question) => {
          const [vector] = await embed(embeddings.url, embeddings.model, [question]);
          return (await index.vectorSearch(hybridScope, vector!, count)).map((hit) => corpusDocumentId(hit.chunk.path));
        },
      },
      { group: "Loom (SQLite)", search: "fused", rank: byQuery(hybrid) },
    );
  }
  return { subjects, close: () => stack.close() };
}
