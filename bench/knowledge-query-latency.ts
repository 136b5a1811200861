import { loadavg } from "node:os";
import { openChunkIndex } from "@loom/knowledge/index/open";
import { startStack } from "@loom/test-stacks/in-process-stack";
import { apiClient } from "@loom/testing/http";
import { localEmbeddingModel, needsOwnServers, type OwnServer, startOwnEmbeddings } from "@loom/testing/own-servers";
import { bulkDocuments, type CorpusDocument } from "@loom/testing/retrieval/corpus";
import { embed, keywordBaseline, paragraphs } from "./knowledge-baselines.ts";
import { indexCorpus } from "./knowledge-corpus-index.ts";
import { percentile, printTable } from "./load.ts";

/** Questions asked at each size: sequential, so each figure is one query's time. */
const queries = 200;

/**
 * Issue 35: query latency, p50 and p99, at `sizes` chunks (10,000 and 100,000), through
 * `POST /knowledge-bases/{id}/query` on an in-process stack on SQLite. The chunks are `bulkDocuments` chunked by
 * the service's own chunker and written through the index's port (ingesting 100,000 chunks through a job would
 * measure ingest again). The questions are five words of a random chunk of the knowledge base.
 *
 * Keyword-only: a knowledge base without a model; baseline in the same run, BM25 by scanning every chunk in this
 * process (bench/knowledge-baselines.ts, no index). Hybrid, when the local embeddings server can run: a knowledge
 * base with all-minilm-l6-v2 whose chunks carry random unit vectors (embedding 100,000 chunks on this CPU would
 * take hours; an exact search costs the same whatever the vectors hold), each query embedded by the server as
 * Loom does; baseline, the same embedding request, an exact cosine scan over the same vectors and the BM25 scan.
 */
export async function benchQueryLatency(options: { sizes: number[] }): Promise<void> {
  console.log(`\nquery latency: ${options.sizes.join(", ")} chunks, ${queries} sequential queries each`);
  const rows: Array<Record<string, string | number>> = [];
  let server: OwnServer | undefined;
  try {
    if (needsOwnServers("query latency, hybrid", "embeddings")) server = await startOwnEmbeddings();
    const model = `openai-compatible:${localEmbeddingModel.id}`;
    for (const size of options.sizes) {
      const index = await openChunkIndex({ db: "bench_knowledge_latency" });
      const stack = await startStack("sqlite", {
        inject: { knowledge: { index } },
        knowledge: server ? { EMBEDDING_MODELS: model, OPENAI_COMPATIBLE_BASE_URL: server.url } : {},
      });
      try {
        const admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
        const organizationId = (await admin.get("/users")).body.users[0].organizations[0] as string;
        const knowledgeBase = async (embeddingModel: string | null) =>
          (
            await admin.post("/knowledge-bases", {
              name: "latency",
              config: { gtc_pg_vector: { embedding_model: embeddingModel } },
            })
          ).body.knowledge_base_id as string;
        const keywordKb = await knowledgeBase(null);
        const hybridKb = server ? await knowledgeBase(model) : undefined;
        const random = mulberry(size);
        const vectors: Float32Array[] = [];
        const documents: CorpusDocument[] = [];
        let chunks = 0;
        for (const doc of bulkDocuments(size)) {
          if (chunks >= size) break;
          documents.push(doc);
          chunks += (await indexCorpus(index, { organizationId, knowledgeBaseId: keywordKb }, [doc])).chunks;
          if (hybridKb) {
            const written = await indexCorpus(index, { organizationId, knowledgeBaseId: hybridKb }, [doc], (texts) =>
              texts.map(() => unitVector(random, localEmbeddingModel.dimensions)),
            );
            vectors.push(...written.vectors);
          }
        }
        // The baseline scans the same text as BM25 units of a paragraph each (the units shown in the row).
        const units = documents.flatMap((d, i) =>
          paragraphs(d.content).map((content, j) => ({ id: `${i}-${j}`, mediaType: d.mediaType, content })),
        );
        const scan = keywordBaseline({ documents: units, questions: [] });
        const words = documents.flatMap((d) =>
          d.content
            .replace(/<[^>]+>/g, " ")
            .split(/\s+/)
            .filter(Boolean),
        );
        const asked = Array.from({ length: queries }, () => {
          const at = Math.floor(random() * (words.length - 5));
          return words.slice(at, at + 5).join(" ");
        });
        const timed = async (ask: (q: string) => Promise<unknown>) => {
          const ms: number[] = [];
          for (const [i, q] of asked.entries()) {
            const started = performance.now();
            await ask(q).catch((error: unknown) => {
              const after = (performance.now() - started).toFixed(0);
              throw new Error(`question ${i} (${JSON.stringify(q)}) failed after ${after} ms`, { cause: error });
            });
            ms.push(performance.now() - started);
          }
          return ms.sort((a, b) => a - b);
        };
        const query = (kb: string) => async (q: string) => {
          const res = await admin.post(`/knowledge-bases/${kb}/query`, { query: q, query_args: { count: 10 } });
          if (res.status !== 200) throw new Error(`query: ${res.status} ${JSON.stringify(res.body)}`);
        };
        const row = async (search: string, loomAsk: (q: string) => Promise<unknown>, base: (q: string) => unknown) => {
          const loadBefore = loadavg()[0]!.toFixed(1);
          // One untimed query first: the first of a model loads the AI SDK (docs/decisions.md, "Loading only what is
          // used"); and it is tried twice, since the gateway may have closed this client's kept-alive connection while
          // the previous baseline held this process's event loop (the client learns it only by a reset).
          await loomAsk(asked[0]!).catch(() => loomAsk(asked[0]!));
          const loom = await timed(loomAsk).catch((error: unknown) => {
            throw new Error(`${search} at ${chunks} chunks, Loom's queries`, { cause: error });
          });
          const baseline = await timed(async (q) => base(q)).catch((error: unknown) => {
            throw new Error(`${search} at ${chunks} chunks, the baseline`, { cause: error });
          });
          rows.push({
            search,
            chunks,
            "scan units (paragraphs)": units.length,
            "Loom p50 (ms)": percentile(loom, 50).toFixed(1),
            "Loom p99 (ms)": percentile(loom, 99).toFixed(1),
            "baseline p50 (ms)": percentile(baseline, 50).toFixed(1),
            "baseline p99 (ms)": percentile(baseline, 99).toFixed(1),
            load: `${loadBefore}→${loadavg()[0]!.toFixed(1)}`,
          });
          console.log(JSON.stringify(rows.at(-1)));
        };
        await row("keyword", query(keywordKb), (q) => scan(q));
        if (hybridKb && server) {
          const url = server.url;
          await row("hybrid", query(hybridKb), async (q) => {
            const [vector] = await embed(url, localEmbeddingModel.id, [q]);
            cosineTop(vectors, vector!, 40);
            await scan(q);
          });
        }
      } finally {
        await stack.close();
      }
    }
  } finally {
    await server?.close();
  }
  printTable(
    "query latency (in-process stack, SQLite; baseline: BM25 by scanning, and for hybrid the query's embedding and an exact cosine scan, in process)",
    rows,
  );
}

/** A random vector of unit length: cosine is then the dot product, as for the model's own vectors. */
function unitVector(random: () => number, dimensions: number): Float32Array {
  const vector = Float32Array.from({ length: dimensions }, () => random() - 0.5);
  const norm = Math.hypot(...vector);
  return vector.map((x) => x / norm);
}

/** The `count` best of an exact cosine scan (unit vectors: the dot product). */
function cosineTop(vectors: readonly Float32Array[], query: Float32Array, count: number): number[] {
  const scores = vectors.map((vector, i) => {
    let dot = 0;
    for (let d = 0; d < vector.length; d++) dot += vector[d]! * query[d]!;
    return { i, dot };
  });
  scores.sort((a, b) => b.dot - a.dot);
  return scores.slice(0, count).map((s) => s.i);
}

/** A seeded generator (mulberry32), so one size asks the same questions every run. */
function mulberry(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
