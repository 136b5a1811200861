import type { ServiceProcess } from "@loom/server/run-service";
import { httpTransport } from "@loom/server/transports";
import { services } from "@loom/services/registry";
import { assistantsConfigSchema } from "./config.ts";
import { openAssistantsStore, wireAssistants } from "./wiring.ts";

/** The assistants service run on its own, from its settings: started by main.ts and by the test stack. */
export const serviceProcess: ServiceProcess<typeof assistantsConfigSchema> = {
  name: "assistants",
  schema: assistantsConfigSchema,
  notes: services.assistants,
  wire: async (config) =>
    wireAssistants(await openAssistantsStore({ url: config.MONGODB_URL, db: config.MONGODB_DB }), {
      knowledge: httpTransport(config.KNOWLEDGE_URL, config.SERVICE_TOKEN),
      tools: httpTransport(config.TOOLS_URL, config.SERVICE_TOKEN),
    }),
};
