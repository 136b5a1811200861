import type { Client } from "@connectrpc/connect";
import type { StorageService } from "@loom/proto/storage/v1/storage_pb";
import type { Principal } from "@loom/server/principal";
import { chunkIndexText } from "../documents/chunk.ts";
import { DocumentError } from "../documents/document-error.ts";
import { documentChunks } from "../documents/documents.ts";
import { documentFormat } from "../documents/formats.ts";
import type { EmbeddingSettings } from "../embedding-models.ts";
import type { ChunkIndex, KnowledgeScope, NewChunk } from "../index/port.ts";
import { embeddingModel } from "../providers.ts";
import type { JobFileError, JobStatus, KnowledgeBaseJobRecord } from "../store/jobs.ts";
import type { KnowledgeBasesStore } from "../store/port.ts";
import { type Checkpoint, embedTexts } from "./embed.ts";
import { ingestedBytes } from "./ingested-bytes.ts";
import type { IngestLimits } from "./limits.ts";
import { planIngest } from "./plan.ts";
import { readAsset } from "./read-asset.ts";
import { JobFailure } from "./retry.ts";
import type { SourceAsset } from "./sources.ts";

export interface IngestDeps {
  store: KnowledgeBasesStore;
  index: ChunkIndex;
  storage: Client<typeof StorageService>;
  embedding: EmbeddingSettings;
  /** The models EMBEDDING_MODELS lists now: a knowledge base's may have been taken out since it was chosen. */
  embeddingModels: readonly string[];
  limits: IngestLimits;
  now: () => Date;
}

/** How a job ended, as the worker writes it. */
export interface JobEnd {
  status: Extract<JobStatus, "SUCCEEDED" | "FAILED" | "CANCELLED">;
  statusDetail: string;
}

/** The job's running account, written after each file so a job taken up again goes on from it. */
interface Account {
  bytesIngested: number;
  errors: JobFileError[];
}

const cancelled: JobEnd = {
  status: "CANCELLED",
  statusDetail: "cancelled while it ran; every file is as it was or as the job made it",
};

/**
 * One ingest of a knowledge base (docs/decisions.md, "Ingest jobs"): its sources' assets listed through storage,
 * those gone removed from the index, those whose version is unchanged skipped, each other one read, chunked,
 * embedded (when the knowledge base has a model) and put in the index in place of its old chunks, as one. `goOn`
 * is asked between files and between embedding batches: false stops the job (cancelled, or no longer this worker's)
 * and the file in hand keeps its old chunks. A file that cannot be read goes in the job's errors and keeps what it
 * had; a failure the job cannot get past (storage, the embedding provider) is thrown as a {@link JobFailure}.
 */
export async function runIngestJob(
  deps: IngestDeps,
  job: KnowledgeBaseJobRecord,
  goOn: Checkpoint,
  signal: AbortSignal,
): Promise<JobEnd> {
  const { store, index, limits, now } = deps;
  const kb = await store.get(job.organizationId, job.knowledgeBaseId);
  if (!kb) return { status: "FAILED", statusDetail: "the knowledge base was deleted" };
  const scope: KnowledgeScope = { organizationId: job.organizationId, knowledgeBaseId: kb.id };
  if (kb.embeddingModel !== "" && !deps.embeddingModels.includes(kb.embeddingModel))
    return {
      status: "FAILED",
      statusDetail: `the knowledge base's embedding model ${kb.embeddingModel} is no longer configured (EMBEDDING_MODELS): configure it again, or change the knowledge base's model`,
    };
  const principal: Principal = { userId: job.createdBy, organizationId: job.organizationId };
  // Taken up again after a lost worker, the job keeps what it counted: the files it finished are skipped below.
  const account: Account = { bytesIngested: job.bytesIngested, errors: [] };
  const fileError = (error: JobFileError) => {
    account.errors.push(error);
  };
  const saveAccount = () => store.updateUnfinishedJob(job.id, { ...account }, now());

  await index.sweep(scope);
  const plan = await planIngest(deps, kb, principal, account.errors);
  // The index starts again when it holds another model's vectors: every file is read below.
  if (plan.restart) await index.removeKnowledgeBase(scope);
  for (const old of plan.gone) {
    if (!(await goOn())) return cancelled;
    await index.removeAsset(scope, old);
  }
  let chunkCount = await index.countChunks(scope);
  const model = kb.embeddingModel === "" ? undefined : embeddingModel(kb.embeddingModel, deps.embedding);

  for (const { key, asset, version, before } of plan.toRead) {
    if (!(await goOn())) return cancelled;
    if (account.bytesIngested + asset.size > limits.maxBytesPerJob) {
      fileError({
        path: key,
        type: "limit_exceeded",
        message: `${key} (${asset.size} bytes) would take the job past its ${limits.maxBytesPerJob} bytes (KNOWLEDGE_MAX_BYTES_PER_JOB); an ingest after this one reads it`,
      });
      continue;
    }
    // The most chunks this file may have: the knowledge base's room, its own old chunks given back.
    const room = limits.maxChunksPerBase - chunkCount + (before?.chunkCount ?? 0);
    const chunks = await fileChunks(deps, principal, asset, room, signal, fileError);
    if (!chunks) continue;
    if (chunks === "over") {
      fileError({
        path: key,
        type: "limit_exceeded",
        message: `${key} makes more chunks than the knowledge base has room for (${Math.max(room, 0)} of its ${limits.maxChunksPerBase}, KNOWLEDGE_MAX_CHUNKS_PER_BASE)`,
      });
      await saveAccount();
      continue;
    }
    const after = chunkCount - (before?.chunkCount ?? 0) + chunks.texts.length;
    const vectors = model && (await embedTexts(model, chunks.texts, goOn, signal));
    if (model && !vectors) return cancelled;
    const newChunks: NewChunk[] = chunks.texts.map((text, i) => ({
      text,
      position: chunks.positions[i]!,
      ...(vectors && { embedding: vectors[i]! }),
    }));
    if (!(await goOn())) return cancelled;
    await index.replaceAsset(scope, { bucketId: asset.bucketId, path: asset.name, version }, newChunks, now());
    ingestedBytes(chunks.bytes);
    chunkCount = after;
    account.bytesIngested += chunks.bytes;
    await saveAccount();
  }
  await saveAccount();
  return { status: "SUCCEEDED", statusDetail: "" };
}

/**
 * A file's chunks, read from storage as a stream (only the chunks are held, never the whole file, except a PDF,
 * which pdf.js parses whole within its ceiling), at most `maxChunks` ("over" past them: the rest is not read);
 * undefined, with a per-file error, when the file cannot be read.
 */
async function fileChunks(
  deps: IngestDeps,
  principal: Principal,
  asset: SourceAsset,
  maxChunks: number,
  signal: AbortSignal,
  fileError: (error: JobFileError) => void,
): Promise<{ texts: string[]; positions: NewChunk["position"][]; bytes: number } | "over" | undefined> {
  const path = `${asset.bucketId}/${asset.name}`;
  try {
    // An unsupported file is known by its name and type: its bytes are not fetched.
    documentFormat(asset.name, asset.contentType);
    const bytes = await readAsset(deps.storage, principal, asset, signal);
    const texts: string[] = [];
    const positions: NewChunk["position"][] = [];
    for await (const chunk of documentChunks({
      name: asset.name,
      ...(asset.contentType !== undefined && { contentType: asset.contentType }),
      bytes: bytes.pieces,
    })) {
      // Past the room, the file is left out: cutting stops there rather than holding chunks that will not be kept.
      if (texts.length >= maxChunks) return "over";
      texts.push(chunkIndexText(chunk));
      positions.push({
        index: chunk.index,
        start: chunk.start,
        end: chunk.end,
        ...(chunk.headingPath.length > 0 && { headings: chunk.headingPath }),
      });
    }
    return { texts, positions, bytes: bytes.read() };
  } catch (error) {
    if (error instanceof DocumentError) {
      fileError({ path, type: error.reason, message: error.message });
      return undefined;
    }
    if (error instanceof JobFailure || signal.aborted) throw error;
    throw new JobFailure(`reading ${path} from storage broke off: ${(error as Error).message}`, { cause: error });
  }
}
