import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { openChunkIndex } from "@loom/knowledge/index/open";
import { openSqlite } from "@loom/store/sqlite";
import { apiClient } from "@loom/testing/http";
import { localEmbeddingModel, needsOwnServers, type OwnServer, startOwnEmbeddings } from "@loom/testing/own-servers";
import { freePort, startProcess, stopProcess } from "@loom/testing/processes";
import { bulkDocuments, type CorpusDocument, retrievalCorpus } from "@loom/testing/retrieval/corpus";
import { indexCorpus } from "./knowledge-corpus-index.ts";
import { bucketKnowledgeBase, ingestJob, uploadDocuments } from "./knowledge-ingest.ts";
import type { LocalEmbeddings } from "./knowledge-retrieval.ts";
import { printTable } from "./load.ts";
import { memoryOf } from "./process-stats.ts";

const MB = 1_000_000;
const load = () => loadavg()[0]!.toFixed(1);

/**
 * About `megabytes` of `bulkDocuments` as files of about 1 MB, each of documents of one format joined by blank
 * lines: ingest's cost is per byte and per chunk, and 100 files upload in seconds where 90,000 took minutes.
 */
function bulkFiles(megabytes: number): CorpusDocument[] {
  const files: CorpusDocument[] = [];
  const open = new Map<CorpusDocument["mediaType"], string[]>();
  const sizes = new Map<CorpusDocument["mediaType"], number>();
  let total = 0;
  const close = (mediaType: CorpusDocument["mediaType"]) => {
    files.push({ id: `bulk-${files.length}`, mediaType, content: open.get(mediaType)!.join("\n\n") });
    open.set(mediaType, []);
    sizes.set(mediaType, 0);
  };
  for (const doc of bulkDocuments(Math.ceil((megabytes * MB) / 1000))) {
    if (total >= megabytes * MB) break;
    open.set(doc.mediaType, [...(open.get(doc.mediaType) ?? []), doc.content]);
    sizes.set(doc.mediaType, (sizes.get(doc.mediaType) ?? 0) + doc.content.length);
    total += doc.content.length;
    if (sizes.get(doc.mediaType)! >= MB) close(doc.mediaType);
  }
  for (const [mediaType, parts] of open) if (parts.length > 0) close(mediaType);
  return files;
}

/** The all-in-one process on its SQLite file, with the local embedding model when given. */
async function startAllInOne(key: string, embeddings: LocalEmbeddings | undefined) {
  const port = await freePort();
  const proc = await startProcess(
    "apps/loom/src/main.ts",
    {
      PORT: String(port),
      BOOTSTRAP_API_KEY: key,
      // 100 MB of text is some 250,000 chunks, past the default 200,000 a knowledge base holds.
      KNOWLEDGE_MAX_CHUNKS_PER_BASE: "10000000",
      ...(embeddings
        ? {
            EMBEDDING_MODELS: `openai-compatible:${embeddings.model}`,
            OPENAI_COMPATIBLE_BASE_URL: embeddings.url,
            // A provider's address set, the all-in-one asks for a default chat model too: the offline echo.
            DEFAULT_MODEL: "loom:echo",
          }
        : {}),
    },
    `http://127.0.0.1:${port}/healthz`,
  );
  return { client: apiClient(`http://127.0.0.1:${port}`, key), pid: proc.pid!, stop: () => stopProcess(proc) };
}

/**
 * The baseline: the same files chunked by the knowledge service's own chunker (`documentChunks`), embedded by
 * the same server when `embeddings`, and written to a chunk index through its port on a SQLite file, in this
 * process. What an ingest job must do at the least; what it adds is its own: reading through storage, the
 * job's bookkeeping, versions, the lock. Timed twice, the faster kept (the machine is shared).
 */
async function baselineSeconds(files: CorpusDocument[], embeddings: LocalEmbeddings | undefined): Promise<number> {
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < (embeddings ? 1 : 2); round++) {
    const dir = mkdtempSync(join(tmpdir(), "loom-bench-index-"));
    const index = await openChunkIndex({ db: "bench", sqlite: openSqlite(join(dir, "index.db")) });
    try {
      await index.init();
      const started = performance.now();
      await indexCorpus(index, { organizationId: "bench", knowledgeBaseId: `kb-${round}` }, files, embeddings);
      best = Math.min(best, (performance.now() - started) / 1000);
    } finally {
      await index.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return best;
}

/**
 * Issue 35: ingest throughput (MB/s of text through ingest jobs on the all-in-one, SQLite) keyword-only and
 * with the local embedding model, against a baseline in the same run (`baselineSeconds`); and the all-in-one's
 * peak resident memory while a job ingests `memoryMB` (goal: under 300 MB), keyword-only — embedding 100 MB
 * with a CPU model would take hours. With embeddings, the retrieval corpus (240 documents) is what is ingested:
 * the model embeds some 20 paragraphs a second here, so its rate bounds that figure, not Loom.
 */
export async function benchIngestThroughput(options: { keywordMB: number; memoryMB: number }): Promise<void> {
  console.log(`\ningest throughput: ${options.keywordMB} MB keyword-only, ${options.memoryMB} MB for memory`);
  const key = `loom_bench-${randomBytes(24).toString("base64url")}`;
  const rows: Array<Record<string, string | number>> = [];
  const measure = async (name: string, files: CorpusDocument[], embeddings: LocalEmbeddings | undefined) => {
    const bytes = files.reduce((sum, f) => sum + Buffer.byteLength(f.content), 0);
    const baseline = await baselineSeconds(files, embeddings);
    const loadBefore = load();
    const loom = await startAllInOne(key, embeddings);
    try {
      const { bucketId } = await uploadDocuments(loom.client, "ingest", files);
      const kb = await bucketKnowledgeBase(
        loom.client,
        bucketId,
        embeddings ? `openai-compatible:${embeddings.model}` : null,
      );
      const job = await ingestJob(loom.client, kb, 200);
      rows.push({
        ingest: name,
        files: files.length,
        MB: (bytes / MB).toFixed(1),
        "Loom MB/s": (bytes / MB / job.seconds).toPrecision(3),
        "baseline MB/s": (bytes / MB / baseline).toPrecision(3),
        "Loom / baseline": (baseline / job.seconds).toFixed(2),
        load: `${loadBefore}→${load()}`,
      });
      console.log(`${name}: ${JSON.stringify(rows.at(-1))}`);
    } finally {
      await loom.stop();
    }
  };

  // Memory: the all-in-one's resident set sampled every 50 ms while the job runs (the upload before it is not counted).
  const bulk = bulkFiles(options.memoryMB);
  const bulkBytes = bulk.reduce((sum, f) => sum + Buffer.byteLength(f.content), 0);
  const loom = await startAllInOne(key, undefined);
  try {
    const { bucketId } = await uploadDocuments(loom.client, "memory", bulk);
    const kb = await bucketKnowledgeBase(loom.client, bucketId, null);
    const before = memoryOf(loom.pid).rss;
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, memoryOf(loom.pid).rss);
    }, 50);
    const loadBefore = load();
    try {
      const job = await ingestJob(loom.client, kb, 200);
      const mib = (n: number) => (n / 1024 / 1024).toFixed(0);
      printTable("memory during an ingest (all-in-one, SQLite, keyword-only)", [
        {
          MB: (bulkBytes / MB).toFixed(1),
          files: bulk.length,
          seconds: job.seconds.toFixed(1),
          "RSS before (MiB)": mib(before),
          "peak RSS during (MiB)": mib(peak),
          goal: peak < 300 * 1024 * 1024 ? "< 300 MB: met" : "< 300 MB: not met",
          load: `${loadBefore}→${load()}`,
        },
      ]);
    } finally {
      clearInterval(sampler);
    }
  } finally {
    await loom.stop();
  }

  await measure("keyword-only, bulk documents", bulkFiles(options.keywordMB), undefined);
  let server: OwnServer | undefined;
  try {
    if (needsOwnServers("ingest throughput with embeddings", "embeddings")) {
      server = await startOwnEmbeddings();
      const embeddings = { url: server.url, model: localEmbeddingModel.id, dimensions: localEmbeddingModel.dimensions };
      await measure(`with ${embeddings.model}, the retrieval corpus`, retrievalCorpus().documents, embeddings);
    }
  } finally {
    await server?.close();
  }
  printTable(
    "ingest throughput (all-in-one, SQLite; baseline: documentChunks + the index port on a SQLite file, in process)",
    rows,
  );
}
