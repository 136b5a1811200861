import type { Transport } from "@connectrpc/connect";
import { StorageService } from "@loom/proto/storage/v1/storage_pb";
import type { RpcService } from "@loom/server/rpc-service";
import { clientFor } from "@loom/server/transports";
import { openStore, type StoreSettings } from "@loom/store/open";
import type { Logger } from "@loom/telemetry/logger";
import { type EmbeddingSettings, embeddingModelNames } from "./embedding-models.ts";
import { openChunkIndex } from "./index/open.ts";
import type { ChunkIndex } from "./index/port.ts";
import type { IngestLimits, IngestSettings } from "./ingest/limits.ts";
import { createIngestWorker } from "./ingest/worker.ts";
import { aiSdkEmbedder } from "./query/embed-query.ts";
import { type SearchSettings, searchModel } from "./query/search-model.ts";
import { createKnowledgeService } from "./service.ts";
import type { KnowledgeBasesStore } from "./store/port.ts";
import { createSqliteKnowledgeBasesStore } from "./store/sqlite.ts";

/** MongoDB when a URL is given, else SQLite. */
export const openKnowledgeStore = (settings: StoreSettings): Promise<KnowledgeBasesStore> =>
  openStore(settings, {
    sqlite: createSqliteKnowledgeBasesStore,
    mongo: async (m) => (await import("./store/mongo.ts")).createMongoKnowledgeBasesStore(m.db, m.ping, m.close),
  });

/** The knowledge service's two stores, in the same database: its records and the chunk index. */
export interface KnowledgeStores {
  store: KnowledgeBasesStore;
  index: ChunkIndex;
}

/** Both stores; `index` when a test gives one of its own (seeded through the index's port). */
export const openKnowledgeStores = async (settings: StoreSettings, index?: ChunkIndex): Promise<KnowledgeStores> => ({
  store: await openKnowledgeStore(settings),
  index: index ?? (await openChunkIndex(settings)),
});

export type KnowledgeSettings = EmbeddingSettings & SearchSettings & Partial<IngestSettings>;

/** The knowledge service as its process holds it: with its chunk index, which tests read. */
export interface WiredKnowledgeService extends RpcService {
  index: ChunkIndex;
}

/**
 * Stores → service and a started ingest worker: shared by main.ts, the all-in-one process and the tests.
 * EMBEDDING_MODELS and KNOWLEDGE_SEARCH_MODEL are checked first, so a bad one fails the start.
 */
export async function wireKnowledge(
  { store, index }: KnowledgeStores,
  settings: KnowledgeSettings,
  peers: { storage: Transport; logger: Logger },
): Promise<WiredKnowledgeService> {
  const embeddingModels = embeddingModelNames(settings);
  const answer = searchModel(settings);
  await store.init();
  await index.init();
  const storage = clientFor(StorageService, peers.storage);
  const now = () => new Date();
  const limits: IngestLimits = {
    maxChunksPerBase: settings.KNOWLEDGE_MAX_CHUNKS_PER_BASE ?? 200_000,
    maxBytesPerJob: settings.KNOWLEDGE_MAX_BYTES_PER_JOB ?? 256 * 1024 * 1024,
  };
  const worker = createIngestWorker({
    store,
    logger: peers.logger,
    leaseMs: settings.KNOWLEDGE_INGEST_LEASE_MS ?? 30_000,
    pollMs: settings.KNOWLEDGE_INGEST_POLL_MS ?? 2_000,
    // Loaded with the first job: a process that never ingests does not hold the ingest code (its memory at rest).
    run: async (job, goOn, signal) =>
      (await import("./ingest/run-job.ts")).runIngestJob(
        {
          store,
          index,
          storage,
          embedding: settings,
          embeddingModels,
          limits,
          now,
        },
        job,
        goOn,
        signal,
      ),
  });
  const service = createKnowledgeService({
    store,
    index,
    storage,
    embeddingModels,
    limits,
    jobQueued: worker.wake,
    embed: aiSdkEmbedder(settings),
    answer,
    now,
  });
  worker.start();
  return {
    ...service,
    index,
    async close() {
      await worker.stop();
      await service.close(); // the index and the store
    },
  };
}
