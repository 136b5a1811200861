import { z } from "zod";
import { mongoSettings, serviceSettings } from "@loom/runtime/config";

/** The assistants service run on its own (one Deployment in production). */
export const assistantsConfigSchema = z.object({
  ...serviceSettings(8082),
  ...mongoSettings("loom_assistants"),
});
