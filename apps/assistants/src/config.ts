import { standaloneSettings } from "@loom/services/settings";
import { z } from "zod";

/** The assistants service run on its own (one Deployment in production). */
export const assistantsConfigSchema = z.object({
  ...standaloneSettings("assistants"),
});
