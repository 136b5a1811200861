import type { ServerResponse } from "node:http";
import type { WiredKnowledgeService } from "@loom/knowledge/wiring";
import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { type FakeOpenAI, type ReceivedRequest, startFakeOpenAI } from "@loom/testing/fake-openai";
import { type ApiClient } from "@loom/testing/http";
import { storeKinds } from "@loom/testing/servers";
import { PDFDocument, StandardFonts } from "pdf-lib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { knowledgeBaseJobListSchema, knowledgeBaseJobSchema } from "../src/schemas.ts";
import { expectError } from "./expect-error.ts";
import { organizationClients } from "./organization-clients.ts";

/** The keys griptape-cloud-client 0.2.0's KnowledgeBaseJobDetail.from_dict pops without a default. */
const clientRequiredKeys = ["created_at", "created_by", "knowledge_base_id", "knowledge_base_job_id", "status"];

const model = "openai-compatible:fake-embedder";
const limits = { bytesPerJob: 100_000, chunksPerBase: 30 };

/** A vector that depends on the text only: 4 dimensions, from its characters. */
function vectorOf(text: string): number[] {
  const v = [1, 0, 0, 0];
  for (let i = 0; i < text.length; i++) v[i % 4]! += text.charCodeAt(i) / 1000;
  return v;
}

function embeddingsAnswer(request: ReceivedRequest, res: ServerResponse): void {
  const inputs: string[] = [request.body.input].flat();
  res.writeHead(200, { "content-type": "application/json" });
  res.end(
    JSON.stringify({
      object: "list",
      data: inputs.map((input, index) => ({ object: "embedding", index, embedding: vectorOf(input) })),
      model: request.body.model,
      usage: { prompt_tokens: inputs.length, total_tokens: inputs.length },
    }),
  );
}

async function pdfSaying(text: string): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  pdf.addPage([595, 842]).drawText(text, { x: 50, y: 790, size: 11, font });
  return pdf.save();
}

const terminal = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);

describe.each(storeKinds("knowledge base jobs over HTTP"))("knowledge base jobs over HTTP (%s store)", (store) => {
  let stack: TestStack;
  let embedder: FakeOpenAI;
  let admin: ApiClient;
  let stranger: ApiClient;
  let orgId: string;
  let bucketId: string;
  let kbId: string;
  const sizes: Record<string, number> = {};

  const embedded = () => embedder.requests.filter((r) => r.path.endsWith("/embeddings"));
  const embeddedTexts = () => embedded().flatMap((r) => [r.body.input].flat() as string[]);
  const index = () => (stack.wired("knowledge") as WiredKnowledgeService).index;
  const scope = () => ({ organizationId: orgId, knowledgeBaseId: kbId });
  const found = async (word: string) =>
    (await index().keywordSearch(scope(), word, 5)).map((hit) => `${hit.chunk.path}`);

  async function upload(bucket: string, name: string, bytes: Uint8Array | string, contentType: string) {
    await admin.put(`/buckets/${bucket}/assets`, { name });
    const { url } = (await admin.post(`/buckets/${bucket}/asset-urls/${name}`, { operation: "PUT" })).body;
    const res = await fetch(url, { method: "PUT", body: bytes, headers: { "content-type": contentType } });
    expect(res.status).toBe(200);
    sizes[name] = typeof bytes === "string" ? Buffer.byteLength(bytes) : bytes.length;
  }

  async function ingest(kb: string, client = admin) {
    const res = await client.post(`/knowledge-bases/${kb}/knowledge-base-jobs`);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    return knowledgeBaseJobSchema.parse(res.body);
  }

  async function finished(jobId: string) {
    for (let i = 0; i < 300; i++) {
      const job = knowledgeBaseJobSchema.parse((await admin.get(`/knowledge-base-jobs/${jobId}`)).body);
      if (terminal.has(job.status)) return job;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`job ${jobId} did not finish`);
  }

  beforeAll(async () => {
    embedder = await startFakeOpenAI();
    embedder.reply(embeddingsAnswer);
    stack = await startStack(store, {
      knowledge: {
        EMBEDDING_MODELS: model,
        OPENAI_COMPATIBLE_BASE_URL: embedder.baseUrl,
        KNOWLEDGE_MAX_BYTES_PER_JOB: limits.bytesPerJob,
        KNOWLEDGE_MAX_CHUNKS_PER_BASE: limits.chunksPerBase,
      },
    });
    ({ admin, stranger, orgId } = await organizationClients(stack, `kb-jobs-stranger-${store}`));
    bucketId = (await admin.post("/buckets", { name: "handbook" })).body.bucket_id;
    await upload(bucketId, "notes.txt", "The quokka census counts animals on Rottnest.", "text/plain");
    await upload(
      bucketId,
      "guide.md",
      "# Install\n\n## Linux\n\nRun the zeppelin installer as root.\n",
      "text/markdown",
    );
    await upload(
      bucketId,
      "page.html",
      "<html><head><title>x</title><script>var hidden = 'scriptword';</script></head><body><nav>menu</nav><h1>Office</h1><p>The marimba room is on floor two.</p></body></html>",
      "text/html",
    );
    await upload(bucketId, "report.pdf", await pdfSaying("The aurora budget closed in March."), "application/pdf");
    await upload(bucketId, "photo.png", new Uint8Array([0x89, 0x50, 0x4e, 0x47]), "image/png");
    await upload(bucketId, "broken.pdf", "this is not a PDF at all", "application/pdf");
    kbId = (
      await admin.post("/knowledge-bases", {
        name: "Handbook",
        config: { gtc_pg_vector: { embedding_model: model } },
        asset_paths: [`${bucketId}/`],
      })
    ).body.knowledge_base_id;
  });
  afterAll(async () => {
    await stack?.close();
    await embedder?.close();
  });

  it("ingests text, Markdown, HTML and PDF, embedded in batches; files it cannot read are errors and the job goes on", async () => {
    const queued = await ingest(kbId);
    expect(queued).toMatchObject({ status: "QUEUED", knowledge_base_id: kbId, bytes_ingested: 0, errors: [] });
    expect(Object.keys(queued)).toEqual(expect.arrayContaining(clientRequiredKeys));
    const job = await finished(queued.knowledge_base_job_id);
    expect(job).toMatchObject({
      status: "SUCCEEDED",
      status_detail: null,
      bytes_ingested: sizes["notes.txt"]! + sizes["guide.md"]! + sizes["page.html"]! + sizes["report.pdf"]!,
    });
    expect(job.completed_at).not.toBeNull();
    expect(job.errors.map((e) => [e.path, e.type]).sort()).toEqual([
      [`${bucketId}/broken.pdf`, "unreadable"],
      [`${bucketId}/photo.png`, "unsupported_type"],
    ]);
    expect(await found("quokka")).toEqual(["notes.txt"]);
    expect(await found("zeppelin")).toEqual(["guide.md"]);
    expect(await found("marimba")).toEqual(["page.html"]);
    expect(await found("aurora")).toEqual(["report.pdf"]);
    expect(await found("scriptword")).toEqual([]);
    // The Markdown chunk is indexed and embedded under its headings.
    expect(embeddedTexts()).toContain(
      "Install > Linux\n\n# Install\n\n## Linux\n\nRun the zeppelin installer as root.",
    );
    expect(embedded().every((r) => r.body.model === "fake-embedder")).toBe(true);
    const [hit] = await index().vectorSearch(scope(), Float32Array.from(vectorOf("x")), 1);
    expect(hit?.chunk.embedding).toBeDefined();
  });

  it("re-ingests incrementally: unchanged files are not embedded again, a changed one is replaced, a deleted one removed", async () => {
    const unchanged = await finished((await ingest(kbId)).knowledge_base_job_id);
    const before = embedded().length;
    expect(unchanged).toMatchObject({ status: "SUCCEEDED", bytes_ingested: 0 });
    expect(embedded().length).toBe(before);

    await upload(bucketId, "notes.txt", "The wombat census moved to Tasmania.", "text/plain");
    expect((await admin.delete(`/buckets/${bucketId}/assets/page.html`)).status).toBe(204);
    const changed = await finished((await ingest(kbId)).knowledge_base_job_id);
    expect(changed).toMatchObject({ status: "SUCCEEDED", bytes_ingested: sizes["notes.txt"] });
    expect(embeddedTexts().slice(-1)).toEqual(["The wombat census moved to Tasmania."]);
    expect(embedded().length).toBe(before + 1);
    expect(await found("quokka")).toEqual([]);
    expect(await found("wombat")).toEqual(["notes.txt"]);
    expect(await found("marimba")).toEqual([]);
    expect((await index().indexedAssets(scope())).map((a) => a.path)).toEqual(["guide.md", "notes.txt", "report.pdf"]);
  });

  it("runs one job of a knowledge base at a time, the next QUEUED; cancel leaves each file old or new", async () => {
    // The embedding provider holds its answers until the test lets them go.
    const held: Array<() => void> = [];
    embedder.reply((request, res) => held.push(() => embeddingsAnswer(request, res)));
    await upload(bucketId, "notes.txt", "The numbat census is on hold.", "text/plain");
    const running = await ingest(kbId);
    await new Promise((resolve) => setTimeout(resolve, 5)); // a later created_at: the list's order is known
    const next = await ingest(kbId);
    for (let i = 0; i < 100 && held.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(held.length).toBe(1);
    expect((await admin.get(`/knowledge-base-jobs/${running.knowledge_base_job_id}`)).body.status).toBe("RUNNING");
    expect((await admin.get(`/knowledge-base-jobs/${next.knowledge_base_job_id}`)).body.status).toBe("QUEUED");

    const cancelled = await admin.post(`/knowledge-base-jobs/${running.knowledge_base_job_id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe("RUNNING");
    const queuedCancel = await admin.post(`/knowledge-base-jobs/${next.knowledge_base_job_id}/cancel`);
    expect(queuedCancel.body).toMatchObject({ status: "CANCELLED" });
    embedder.reply(embeddingsAnswer);
    held.splice(0).forEach((release) => release());
    const ended = await finished(running.knowledge_base_job_id);
    expect(ended.status).toBe("CANCELLED");
    expect(ended.status_detail).toMatch(/cancelled/);
    // The file in hand keeps its old chunks: the job stopped before it replaced them.
    expect(await found("wombat")).toEqual(["notes.txt"]);
    expect(await found("numbat")).toEqual([]);

    const list = await admin.get(`/knowledge-bases/${kbId}/knowledge-base-jobs?status=CANCELLED`);
    expect(list.status).toBe(200);
    expect(knowledgeBaseJobListSchema.parse(list.body).knowledge_base_jobs.map((j) => j.knowledge_base_job_id)).toEqual(
      [next.knowledge_base_job_id, running.knowledge_base_job_id],
    );
    const all = knowledgeBaseJobListSchema.parse(
      (await admin.get(`/knowledge-bases/${kbId}/knowledge-base-jobs?page_size=2`)).body,
    );
    expect(all.pagination).toMatchObject({ total_count: 5, page_size: 2 });
    expectError(await admin.get(`/knowledge-bases/${kbId}/knowledge-base-jobs?status=DONE`), 400, "ValidationError");
  });

  it("reads every file again, without vectors, once the knowledge base's model is taken away", async () => {
    const before = embedded().length;
    const patched = await admin.patch(`/knowledge-bases/${kbId}`, {
      config: { gtc_pg_vector: { embedding_model: null } },
    });
    expect(patched.status).toBe(200);
    const job = await finished((await ingest(kbId)).knowledge_base_job_id);
    expect(job).toMatchObject({
      status: "SUCCEEDED",
      bytes_ingested: sizes["guide.md"]! + sizes["notes.txt"]! + sizes["report.pdf"]!,
    });
    expect(embedded().length).toBe(before);
    expect(await found("numbat")).toEqual(["notes.txt"]);
    expect(await index().vectorSearch(scope(), Float32Array.from(vectorOf("x")), 5)).toEqual([]);
    await admin.patch(`/knowledge-bases/${kbId}`, { config: { gtc_pg_vector: { embedding_model: model } } });
  });

  /** The jobs listed for the knowledge base. */
  const jobsOf = async (kb: string) =>
    knowledgeBaseJobListSchema.parse((await admin.get(`/knowledge-bases/${kb}/knowledge-base-jobs`)).body)
      .knowledge_base_jobs;

  it("refuses with 409 a job that would read more than KNOWLEDGE_MAX_BYTES_PER_JOB, writing nothing; a narrower one runs", async () => {
    const bucket = (await admin.post("/buckets", { name: "too-big" })).body.bucket_id;
    await upload(bucket, "huge.txt", "a ".repeat(limits.bytesPerJob / 2 + 1), "text/plain");
    await upload(bucket, "small.txt", "The kakapo lives here.", "text/plain");
    const kb = (await admin.post("/knowledge-bases", { name: "Too big", asset_paths: [`${bucket}/`] })).body
      .knowledge_base_id;
    const total = sizes["huge.txt"]! + sizes["small.txt"]!;
    const body = expectError(await admin.post(`/knowledge-bases/${kb}/knowledge-base-jobs`), 409, "Conflict");
    expect(body.errors[0]!.message).toBe(
      `the job would read ${total} bytes (2 files new or changed), more than KNOWLEDGE_MAX_BYTES_PER_JOB (${limits.bytesPerJob}); narrow the knowledge base's asset paths or data connectors and widen them again over several jobs (each reads only new or changed files), or raise KNOWLEDGE_MAX_BYTES_PER_JOB`,
    );
    expect(await jobsOf(kb)).toEqual([]);
    expect((await admin.patch(`/knowledge-bases/${kb}`, { asset_paths: [`${bucket}/small.txt`] })).status).toBe(200);
    const job = await finished((await ingest(kb)).knowledge_base_job_id);
    expect([job.status, job.errors]).toEqual(["SUCCEEDED", []]);
    expect(await jobsOf(kb)).toHaveLength(1);
  });

  it("refuses with 409 a job of a full knowledge base with files to add; one that only skips or removes runs", async () => {
    const bucket = (await admin.post("/buckets", { name: "full" })).body.bucket_id;
    await upload(bucket, "kept.txt", "The takahe is rare.", "text/plain");
    await upload(bucket, "old.txt", "The weka is curious.", "text/plain");
    const kb = (await admin.post("/knowledge-bases", { name: "Full", asset_paths: [`${bucket}/`] })).body
      .knowledge_base_id;
    expect((await finished((await ingest(kb)).knowledge_base_job_id)).status).toBe("SUCCEEDED");
    // kept.txt made to hold the whole limit, at the version the job indexed: unchanged, so a job skips it.
    const kbScope = { organizationId: orgId, knowledgeBaseId: kb };
    const kept = (await index().indexedAssets(kbScope)).find((a) => a.path === "kept.txt")!;
    const filler = Array.from({ length: limits.chunksPerBase }, (_, i) => ({
      text: `filler ${i}`,
      position: { index: i, start: i, end: i + 1 },
    }));
    await index().replaceAsset(kbScope, kept, filler, new Date());
    expect(await index().countChunks(kbScope)).toBe(limits.chunksPerBase + 1);

    // Nothing new: the job skips kept.txt and old.txt, and is accepted.
    expect((await finished((await ingest(kb)).knowledge_base_job_id)).status).toBe("SUCCEEDED");
    await upload(bucket, "new.txt", "The kea steals wipers.", "text/plain");
    await upload(bucket, "old.txt", "The weka is curious and bold.", "text/plain");
    const body = expectError(await admin.post(`/knowledge-bases/${kb}/knowledge-base-jobs`), 409, "Conflict");
    expect(body.errors[0]!.message).toBe(
      `the knowledge base is full: it holds ${limits.chunksPerBase + 1} chunks, KNOWLEDGE_MAX_CHUNKS_PER_BASE is ${limits.chunksPerBase}, and its sources have 2 files new or changed with no room for them; take files out of its asset paths or data connectors (a job then removes their chunks), or raise KNOWLEDGE_MAX_CHUNKS_PER_BASE`,
    );
    expect(await jobsOf(kb)).toHaveLength(2);

    // Taking kept.txt out of the sources: the job removes its chunks, which makes room for the others.
    expect(
      (await admin.patch(`/knowledge-bases/${kb}`, { asset_paths: [`${bucket}/new.txt`, `${bucket}/old.txt`] })).status,
    ).toBe(200);
    const job = await finished((await ingest(kb)).knowledge_base_job_id);
    expect([job.status, job.errors]).toEqual(["SUCCEEDED", []]);
    expect((await index().indexedAssets(kbScope)).map((a) => a.path)).toEqual(["new.txt", "old.txt"]);
  });

  it("keeps within both limits file by file when files grow after the job was accepted", async () => {
    const bucket = (await admin.post("/buckets", { name: "big" })).body.bucket_id;
    await upload(bucket, "huge.txt", "Small for now.", "text/plain");
    await upload(bucket, "many.txt", "Small for now too.", "text/plain");
    await upload(bucket, "small.txt", "The kakapo lives here.", "text/plain");
    const kb = (
      await admin.post("/knowledge-bases", {
        name: "Limits",
        config: { gtc_pg_vector: { embedding_model: model } },
        asset_paths: [`${bucket}/`],
      })
    ).body.knowledge_base_id;
    // The first job is held at its first embedding, so the second waits QUEUED while the files grow.
    const held: Array<() => void> = [];
    embedder.reply((request, res) => held.push(() => embeddingsAnswer(request, res)));
    const first = await ingest(kb);
    for (let i = 0; i < 100 && held.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    const second = await ingest(kb);
    expect(second.status).toBe("QUEUED");
    await upload(bucket, "huge.txt", "a ".repeat(limits.bytesPerJob / 2 + 1), "text/plain");
    const sentences = Array.from({ length: 1200 }, (_, i) => `Sentence ${i} is about the kiwi count.`).join(" ");
    await upload(bucket, "many.txt", sentences, "text/plain");
    embedder.reply(embeddingsAnswer);
    held.splice(0).forEach((release) => release());
    await finished(first.knowledge_base_job_id);
    const job = await finished(second.knowledge_base_job_id);
    expect(job.status).toBe("SUCCEEDED");
    expect(job.errors.map((e) => [e.path, e.type])).toEqual([
      [`${bucket}/huge.txt`, "limit_exceeded"],
      [`${bucket}/many.txt`, "limit_exceeded"],
    ]);
    expect(job.errors[0]!.message).toMatch(/KNOWLEDGE_MAX_BYTES_PER_JOB/);
    expect(job.errors[1]!.message).toMatch(/KNOWLEDGE_MAX_CHUNKS_PER_BASE/);
    const small = await index().keywordSearch({ organizationId: orgId, knowledgeBaseId: kb }, "kakapo", 5);
    expect(small.map((hit) => hit.chunk.path)).toEqual(["small.txt"]);
  });

  it("fails a job whose embedding provider keeps failing, saying how often it was tried", async () => {
    embedder.reply((_request, res) => {
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "model crashed", type: "server_error" } }));
    });
    try {
      await upload(bucketId, "notes.txt", "The bilby census is late.", "text/plain");
      const job = await finished((await ingest(kbId)).knowledge_base_job_id);
      expect(job.status).toBe("FAILED");
      expect(job.status_detail).toMatch(/embedding provider failed 3 times/);
    } finally {
      embedder.reply(embeddingsAnswer);
    }
  }, 30_000);

  it("answers 404 to another organization for the jobs and the knowledge base, as for unknown ids", async () => {
    const job = (await admin.get(`/knowledge-bases/${kbId}/knowledge-base-jobs`)).body.knowledge_base_jobs[0];
    const unknown = crypto.randomUUID();
    for (const res of [
      await stranger.get(`/knowledge-base-jobs/${job.knowledge_base_job_id}`),
      await stranger.post(`/knowledge-base-jobs/${job.knowledge_base_job_id}/cancel`),
      await stranger.post(`/knowledge-bases/${kbId}/knowledge-base-jobs`),
      await stranger.get(`/knowledge-bases/${kbId}/knowledge-base-jobs`),
      await admin.get(`/knowledge-base-jobs/${unknown}`),
      await admin.post(`/knowledge-bases/${unknown}/knowledge-base-jobs`),
    ])
      expectError(res, 404, "NotFound");
    expectError(await admin.get("/knowledge-base-jobs/not-an-id"), 400, "ValidationError");
  });

  it("deleting a knowledge base deletes its jobs and its chunks", async () => {
    const job = (await admin.get(`/knowledge-bases/${kbId}/knowledge-base-jobs`)).body.knowledge_base_jobs[0];
    expect((await admin.delete(`/knowledge-bases/${kbId}`)).status).toBe(204);
    expectError(await admin.get(`/knowledge-base-jobs/${job.knowledge_base_job_id}`), 404, "NotFound");
    expect(await index().indexedAssets(scope())).toEqual([]);
    expect(await index().countChunks(scope())).toBe(0);
  });

  it("a running job of a deleted knowledge base stops at its next check and writes nothing", async () => {
    const bucket = (await admin.post("/buckets", { name: "doomed" })).body.bucket_id;
    await upload(bucket, "x.txt", "The xenops nests here.", "text/plain");
    await upload(bucket, "y.txt", "The yellowhammer sings.", "text/plain");
    const kb = (
      await admin.post("/knowledge-bases", {
        name: "Doomed",
        config: { gtc_pg_vector: { embedding_model: model } },
        asset_paths: [`${bucket}/`],
      })
    ).body.knowledge_base_id;
    const held: Array<() => void> = [];
    embedder.reply((request, res) => held.push(() => embeddingsAnswer(request, res)));
    const job = await ingest(kb);
    for (let i = 0; i < 100 && held.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(held.length).toBe(1);
    expect((await admin.delete(`/knowledge-bases/${kb}`)).status).toBe(204);
    embedder.reply(embeddingsAnswer);
    held.splice(0).forEach((release) => release());
    await new Promise((resolve) => setTimeout(resolve, 500));
    expectError(await admin.get(`/knowledge-base-jobs/${job.knowledge_base_job_id}`), 404, "NotFound");
    expect(embeddedTexts()).not.toContain("The yellowhammer sings.");
    expect(await index().indexedAssets({ organizationId: orgId, knowledgeBaseId: kb })).toEqual([]);
  });

  it("answers 503 to a job's create while storage does not answer, queueing nothing", async () => {
    const kb = (await admin.post("/knowledge-bases", { name: "No storage", asset_paths: [`${bucketId}/`] })).body;
    await stack.stopService("storage");
    const body = expectError(
      await admin.post(`/knowledge-bases/${kb.knowledge_base_id}/knowledge-base-jobs`),
      503,
      "Unavailable",
    );
    expect(body.errors[0]!.message).toMatch(
      /^storage did not answer \(listing the assets of bucket .*\) after 3 attempts.*; no job was queued: try again$/,
    );
    expect(await jobsOf(kb.knowledge_base_id)).toEqual([]);
  });
});
