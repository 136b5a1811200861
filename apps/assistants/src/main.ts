import "./tracing.ts";
import { runService } from "@loom/server/run-service";
import { assistantsConfigSchema } from "./config.ts";
import { openAssistantsStore, wireAssistants } from "./wiring.ts";

await runService("assistants", assistantsConfigSchema, { keeps: "assistants" }, async (config) =>
  wireAssistants(await openAssistantsStore({ url: config.MONGODB_URL, db: config.MONGODB_DB })),
);
