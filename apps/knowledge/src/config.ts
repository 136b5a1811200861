import { services } from "@loom/services/registry";
import { serviceUrlSettings, standaloneSettings } from "@loom/services/settings";
import { z } from "zod";
import { embeddingSettings } from "./embedding-models.ts";
import { ingestSettings } from "./ingest/limits.ts";
import { searchSettings } from "./query/search-model.ts";

/** The knowledge service run on its own (one Deployment in production). */
export const knowledgeConfigSchema = z.object({
  ...standaloneSettings("knowledge"),
  ...embeddingSettings,
  ...ingestSettings,
  ...searchSettings,
  // STORAGE_URL: the service it calls (the service registry's `calls`).
  ...serviceUrlSettings(services.knowledge.calls),
});
