import { standaloneSettings } from "@loom/services/settings";
import { z } from "zod";

/** The tools service run on its own (one Deployment in production). */
export const toolsConfigSchema = z.object({
  ...standaloneSettings("tools"),
});
