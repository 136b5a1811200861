import { type EmbeddingModel, embedMany } from "ai";
import { JobFailure } from "./retry.ts";

/** Texts per embedding request: a cancel is seen between two (docs/decisions.md, "Ingest jobs"). */
export const embeddingBatchSize = 32;
/** The AI SDK's retries of a failed request (with its backoff): each batch is tried 3 times in all. */
export const embeddingRetries = 2;

/** What a job asks between two steps: whether to go on. */
export type Checkpoint = () => Promise<boolean>;

/**
 * The embeddings of `texts`, in order, {@link embeddingBatchSize} at a time; undefined when `goOn` says stop between
 * two batches. A provider that fails a batch {@link embeddingRetries} + 1 times fails the job.
 */
export async function embedTexts(
  model: EmbeddingModel,
  texts: readonly string[],
  goOn: Checkpoint,
  signal: AbortSignal,
): Promise<Float32Array[] | undefined> {
  const vectors: Float32Array[] = [];
  for (let at = 0; at < texts.length; at += embeddingBatchSize) {
    if (at > 0 && !(await goOn())) return undefined;
    try {
      const { embeddings } = await embedMany({
        model,
        values: texts.slice(at, at + embeddingBatchSize),
        maxRetries: embeddingRetries,
        abortSignal: signal,
      });
      for (const embedding of embeddings) vectors.push(Float32Array.from(embedding));
    } catch (error) {
      if (signal.aborted) throw error;
      throw new JobFailure(`the embedding provider failed ${embeddingRetries + 1} times: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
  return vectors;
}
