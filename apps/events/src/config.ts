import { z } from "zod";
import { env, mongoSettings, serviceSettings } from "@loom/runtime/config";

/** The events service run on its own (one Deployment in production). */
export const eventsConfigSchema = z.object({
  ...serviceSettings(8084),
  ...mongoSettings("loom_events"),
  /** Where stored events are published for every replica's followers; without it, only this process sees them live. */
  NATS_URL: env.url().optional(),
});
