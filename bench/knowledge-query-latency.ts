import { loadavg } from "node:os";
import { openChunkIndex } from "@loom/knowledge/index/open";
import { startStack } from "@loom/test-stacks/in-process-stack";
import { apiClient } from "@loom/testing/http";
import { bulkDocuments, type CorpusDocument } from "@loom/testing/retrieval/corpus";
import { keywordBaseline, paragraphs } from "./knowledge-baselines.ts";
import { indexCorpus } from "./knowledge-corpus-index.ts";
import { percentile, printTable } from "./load.ts";

/** Questions asked at each size: sequential, so each figure is one query's time. */
const queries = 200;

/**
 * Issue 35: query latency, p50 and p99, keyword-only, at `sizes` chunks (10,000 and 100,000), through
 * `POST /knowledge-bases/{id}/query` on an in-process stack on SQLite. The chunks are `bulkDocuments` chunked by
 * the service's own chunker and written through the index's port (ingesting 100,000 chunks through a job would
 * measure ingest again). The questions are five words of a random chunk of the knowledge base. Baseline in the
 * same run: BM25 by scanning every chunk in this process (bench/knowledge-baselines.ts, no index).
 */
export async function benchQueryLatency(options: { sizes: number[] }): Promise<void> {
  console.log(`\nquery latency: ${options.sizes.join(", ")} chunks, ${queries} sequential queries each, keyword-only`);
  const rows: Array<Record<string, string | number>> = [];
  for (const size of options.sizes) {
    const index = await openChunkIndex({ db: "bench_knowledge_latency" });
    const stack = await startStack("sqlite", { inject: { knowledge: { index } } });
    try {
      const admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
      const organizationId = (await admin.get("/users")).body.users[0].organizations[0] as string;
      const kb = (
        await admin.post("/knowledge-bases", { name: "latency", config: { gtc_pg_vector: { embedding_model: null } } })
      ).body.knowledge_base_id as string;
      const documents: CorpusDocument[] = [];
      let chunks = 0;
      for (const doc of bulkDocuments(size)) {
        if (chunks >= size) break;
        documents.push(doc);
        chunks += (await indexCorpus(index, { organizationId, knowledgeBaseId: kb }, [doc])).chunks;
      }
      // The baseline scans the same text as BM25 units of a paragraph each (the units shown in the row).
      const units = documents.flatMap((d, i) =>
        paragraphs(d.content).map((content, j) => ({ id: `${i}-${j}`, mediaType: d.mediaType, content })),
      );
      const scan = keywordBaseline({ documents: units, questions: [] });
      const random = mulberry(size);
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
      const loadBefore = loadavg()[0]!.toFixed(1);
      const timed = async (ask: (q: string) => Promise<unknown>) => {
        const ms: number[] = [];
        for (const q of asked) {
          const started = performance.now();
          await ask(q);
          ms.push(performance.now() - started);
        }
        return ms.sort((a, b) => a - b);
      };
      const loom = await timed(async (query) => {
        const res = await admin.post(`/knowledge-bases/${kb}/query`, { query, query_args: { count: 10 } });
        if (res.status !== 200) throw new Error(`query: ${res.status} ${JSON.stringify(res.body)}`);
      });
      const base = await timed((q) => scan(q));
      rows.push({
        chunks,
        documents: documents.length,
        "scan units (paragraphs)": units.length,
        "Loom p50 (ms)": percentile(loom, 50).toFixed(1),
        "Loom p99 (ms)": percentile(loom, 99).toFixed(1),
        "scan p50 (ms)": percentile(base, 50).toFixed(1),
        "scan p99 (ms)": percentile(base, 99).toFixed(1),
        load: `${loadBefore}→${loadavg()[0]!.toFixed(1)}`,
      });
      console.log(JSON.stringify(rows.at(-1)));
    } finally {
      await stack.close();
    }
  }
  printTable("query latency, keyword-only (in-process stack, SQLite; baseline: BM25 by scanning, in process)", rows);
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
