import type { ServiceProcess } from "@loom/server/run-service";
import { httpTransport } from "@loom/server/transports";
import { services } from "@loom/services/registry";
import { knowledgeConfigSchema } from "./config.ts";
import { openKnowledgeStores, wireKnowledge } from "./wiring.ts";

/** The knowledge service run on its own, from its settings: started by main.ts and by the test stack. */
export const serviceProcess: ServiceProcess<typeof knowledgeConfigSchema> = {
  name: "knowledge",
  schema: knowledgeConfigSchema,
  notes: services.knowledge,
  wire: async (config, { logger }) =>
    wireKnowledge(await openKnowledgeStores({ url: config.MONGODB_URL, db: config.MONGODB_DB }), config, {
      storage: httpTransport(config.STORAGE_URL, config.SERVICE_TOKEN),
      logger,
    }),
};
