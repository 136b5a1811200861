import { runService } from "@loom/kit/service-main";
import { assistantsConfigSchema } from "./config.ts";
import { openAssistantsStore, wireAssistants } from "./wiring.ts";

await runService({
  name: "assistants",
  schema: assistantsConfigSchema,
  keeps: "assistants",
  wire: async (config) => wireAssistants(await openAssistantsStore({ url: config.MONGODB_URL, db: config.MONGODB_DB })),
});
