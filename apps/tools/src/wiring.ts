import type { RpcService } from "@loom/server/rpc-service";
import { openStore, type StoreSettings } from "@loom/store/open";
import { createToolsService } from "./service.ts";
import { createMongoToolsStore } from "./store/mongo.ts";
import type { ToolsStore } from "./store/port.ts";
import { createSqliteToolsStore } from "./store/sqlite.ts";

/** MongoDB when a URL is given, else SQLite. */
export const openToolsStore = (settings: StoreSettings): Promise<ToolsStore> =>
  openStore(settings, {
    sqlite: createSqliteToolsStore,
    mongo: (m) => createMongoToolsStore(m.db, m.ping, m.close),
  });

/** Store → service: shared by main.ts, the all-in-one process and the tests. */
export async function wireTools(store: ToolsStore): Promise<RpcService> {
  await store.init();
  return createToolsService({ store });
}
