import type { ApiClient } from "@loom/testing/http";
import type { CorpusDocument } from "@loom/testing/retrieval/corpus";
import { corpusFileName } from "./knowledge-corpus-index.ts";

/** How many uploads are in flight at once: enough to keep the gateway busy, few enough for 2 shared cores. */
const uploadsAtOnce = 8;

/**
 * Uploads documents into a new bucket as a user does: each asset created, then its bytes PUT to the signed URL
 * storage gives. Returns the bucket's id and the bytes uploaded.
 */
export async function uploadDocuments(
  admin: ApiClient,
  name: string,
  documents: Iterable<CorpusDocument>,
): Promise<{ bucketId: string; bytes: number; files: number }> {
  const bucketId = (await admin.post("/buckets", { name })).body.bucket_id as string;
  let bytes = 0;
  let files = 0;
  const inFlight = new Set<Promise<void>>();
  for (const doc of documents) {
    const upload = (async () => {
      const file = corpusFileName(doc);
      await admin.put(`/buckets/${bucketId}/assets`, { name: file });
      const { url } = (await admin.post(`/buckets/${bucketId}/asset-urls/${file}`, { operation: "PUT" })).body;
      const body = Buffer.from(doc.content);
      const res = await fetch(url, { method: "PUT", body, headers: { "content-type": doc.mediaType } });
      if (res.status !== 200) throw new Error(`upload ${file}: ${res.status}`);
      bytes += body.length;
      files++;
    })();
    inFlight.add(upload);
    void upload.finally(() => inFlight.delete(upload));
    if (inFlight.size >= uploadsAtOnce) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  return { bucketId, bytes, files };
}

/** A knowledge base over a bucket's files, keyword-only (`embeddingModel` null) or with a model. */
export async function bucketKnowledgeBase(
  admin: ApiClient,
  bucketId: string,
  embeddingModel: string | null,
): Promise<string> {
  const res = await admin.post("/knowledge-bases", {
    name: "corpus",
    config: { gtc_pg_vector: { embedding_model: embeddingModel } },
    asset_paths: [`${bucketId}/`],
  });
  if (res.status !== 201) throw new Error(`knowledge base: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.knowledge_base_id as string;
}

/** One ingest job, from its creation to SUCCEEDED (anything else throws), and how long that took. */
export async function ingestJob(
  admin: ApiClient,
  knowledgeBaseId: string,
  pollMs = 100,
): Promise<{ seconds: number; bytesIngested: number }> {
  const started = performance.now();
  const created = await admin.post(`/knowledge-bases/${knowledgeBaseId}/knowledge-base-jobs`);
  if (created.status !== 202) throw new Error(`ingest job: ${created.status} ${JSON.stringify(created.body)}`);
  const jobId = created.body.knowledge_base_job_id as string;
  for (;;) {
    const job = (await admin.get(`/knowledge-base-jobs/${jobId}`)).body;
    if (job.status === "SUCCEEDED") {
      if (job.errors.length > 0) throw new Error(`ingest job ${jobId}: ${JSON.stringify(job.errors.slice(0, 3))}`);
      return { seconds: (performance.now() - started) / 1000, bytesIngested: job.bytes_ingested as number };
    }
    if (job.status === "FAILED" || job.status === "CANCELLED")
      throw new Error(`ingest job ${jobId}: ${job.status} ${job.status_detail}`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
