import type { ServiceProcess } from "@loom/server/run-service";
import { services } from "@loom/services/registry";
import { toolsConfigSchema } from "./config.ts";
import { openToolsStore, wireTools } from "./wiring.ts";

/** The tools service run on its own, from its settings: started by main.ts and by the test stack. */
export const serviceProcess: ServiceProcess<typeof toolsConfigSchema> = {
  name: "tools",
  schema: toolsConfigSchema,
  notes: services.tools,
  wire: async (config, { logger }) =>
    wireTools(await openToolsStore({ url: config.MONGODB_URL, db: config.MONGODB_DB }), config, logger),
};
