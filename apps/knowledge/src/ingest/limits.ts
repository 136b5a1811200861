import { z } from "zod";

/** The ingest's limits and worker settings (README, settings table; docs/decisions.md, "Ingest jobs"). */
export const ingestSettings = {
  /** The most chunks one knowledge base may hold: a file that would go past it is not ingested (a per-file error). */
  KNOWLEDGE_MAX_CHUNKS_PER_BASE: z.coerce.number().int().positive().default(200_000),
  /** The most bytes one job reads: files past it are not read (a per-file error), the job goes on with smaller ones. */
  KNOWLEDGE_MAX_BYTES_PER_JOB: z.coerce
    .number()
    .int()
    .positive()
    .default(256 * 1024 * 1024),
  /** How long a worker holds a knowledge base's job without renewing (every third of it). */
  KNOWLEDGE_INGEST_LEASE_MS: z.coerce.number().int().positive().default(30_000),
  /** How often a worker looks for queued jobs when nothing woke it. */
  KNOWLEDGE_INGEST_POLL_MS: z.coerce.number().int().positive().default(2_000),
};

export type IngestSettings = { [K in keyof typeof ingestSettings]: number };

export interface IngestLimits {
  maxChunksPerBase: number;
  maxBytesPerJob: number;
}
