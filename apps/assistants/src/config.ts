import { z } from "zod";
import { standaloneSettings } from "@loom/services/settings";

/** The assistants service run on its own (one Deployment in production). */
export const assistantsConfigSchema = z.object({
  ...standaloneSettings("assistants"),
});
