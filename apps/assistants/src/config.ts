import { services } from "@loom/services/registry";
import { serviceUrlSettings, standaloneSettings } from "@loom/services/settings";
import { z } from "zod";

/** The assistants service run on its own (one Deployment in production). */
export const assistantsConfigSchema = z.object({
  ...standaloneSettings("assistants"),
  // KNOWLEDGE_URL, TOOLS_URL: the services it calls (the service registry's `calls`), to check an assistant's ids.
  ...serviceUrlSettings(services.assistants.calls),
});
