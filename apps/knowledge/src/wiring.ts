import type { Transport } from "@connectrpc/connect";
import { StorageService } from "@loom/proto/storage/v1/storage_pb";
import type { RpcService } from "@loom/server/rpc-service";
import { clientFor } from "@loom/server/transports";
import { openStore, type StoreSettings } from "@loom/store/open";
import { embeddingModelNames } from "./embedding-models.ts";
import type { ChunkIndex } from "./index/port.ts";
import { aiSdkEmbedder } from "./query/embed-query.ts";
import { type SearchSettings, searchModel } from "./query/search-model.ts";
import { createKnowledgeService } from "./service.ts";
import { createMongoKnowledgeBasesStore } from "./store/mongo.ts";
import type { KnowledgeBasesStore } from "./store/port.ts";
import { createSqliteKnowledgeBasesStore } from "./store/sqlite.ts";

/** MongoDB when a URL is given, else SQLite. */
export const openKnowledgeStore = (settings: StoreSettings): Promise<KnowledgeBasesStore> =>
  openStore(settings, {
    sqlite: createSqliteKnowledgeBasesStore,
    mongo: (m) => createMongoKnowledgeBasesStore(m.db, m.ping, m.close),
  });

/**
 * Store → service: shared by main.ts, the all-in-one process and the tests.
 * EMBEDDING_MODELS and KNOWLEDGE_SEARCH_MODEL are checked first, so a bad one fails the start.
 */
export async function wireKnowledge(
  store: KnowledgeBasesStore,
  index: ChunkIndex,
  settings: SearchSettings,
  peers: { storage: Transport },
): Promise<RpcService> {
  const embeddingModels = embeddingModelNames(settings);
  const answer = searchModel(settings);
  await store.init();
  await index.init();
  return createKnowledgeService({
    store,
    index,
    embed: aiSdkEmbedder(settings),
    answer,
    storage: clientFor(StorageService, peers.storage),
    embeddingModels,
  });
}
