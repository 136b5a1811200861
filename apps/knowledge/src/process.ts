import type { ServiceProcess } from "@loom/server/run-service";
import { httpTransport } from "@loom/server/transports";
import { services } from "@loom/services/registry";
import { knowledgeConfigSchema } from "./config.ts";
import type { ChunkIndex } from "./index/port.ts";
import { openKnowledgeStores, wireKnowledge } from "./wiring.ts";

/**
 * The knowledge service run on its own, from its settings: started by main.ts and by the test stack, which may give
 * it a chunk index of its own (`index`, seeded by the test through the index's port).
 */
export const serviceProcess: ServiceProcess<typeof knowledgeConfigSchema, { index?: ChunkIndex }> = {
  name: "knowledge",
  schema: knowledgeConfigSchema,
  notes: services.knowledge,
  wire: async (config, { logger, index }) =>
    wireKnowledge(await openKnowledgeStores({ url: config.MONGODB_URL, db: config.MONGODB_DB }, index), config, {
      storage: httpTransport(config.STORAGE_URL, config.SERVICE_TOKEN),
      logger,
    }),
};
