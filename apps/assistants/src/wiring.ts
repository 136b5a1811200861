import type { Transport } from "@connectrpc/connect";
import { KnowledgeBasesService } from "@loom/proto/knowledge/v1/knowledge_bases_pb";
import { ToolsService } from "@loom/proto/tools/v1/tools_pb";
import type { RpcService } from "@loom/server/rpc-service";
import { clientFor } from "@loom/server/transports";
import { openStore, type StoreSettings } from "@loom/store/open";
import { createAssistantsService } from "./service.ts";
import type { AssistantsStore } from "./store/port.ts";
import { createSqliteAssistantsStore } from "./store/sqlite.ts";

/** MongoDB when a URL is given, else SQLite. */
export const openAssistantsStore = (settings: StoreSettings): Promise<AssistantsStore> =>
  openStore(settings, {
    sqlite: createSqliteAssistantsStore,
    mongo: async (m) => (await import("./store/mongo.ts")).createMongoAssistantsStore(m.db, m.ping, m.close),
  });

/**
 * Store → service: shared by main.ts, the all-in-one process and the tests.
 * `knowledge` and `tools` reach the services that say which knowledge base and tool ids exist.
 */
export async function wireAssistants(
  store: AssistantsStore,
  peers: { knowledge: Transport; tools: Transport },
): Promise<RpcService> {
  await store.init();
  return createAssistantsService({
    store,
    knowledgeBases: clientFor(KnowledgeBasesService, peers.knowledge),
    tools: clientFor(ToolsService, peers.tools),
  });
}
