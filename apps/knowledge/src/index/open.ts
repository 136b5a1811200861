import { openStore, type StoreSettings } from "@loom/store/open";
import type { ChunkIndex } from "./port.ts";
import { createSqliteChunkIndex } from "./sqlite.ts";

/** The chunk index on MongoDB when a URL is given, else SQLite. */
export const openChunkIndex = (settings: StoreSettings): Promise<ChunkIndex> =>
  openStore(settings, {
    sqlite: createSqliteChunkIndex,
    mongo: async (m) => (await import("./mongo.ts")).createMongoChunkIndex(m),
  });
