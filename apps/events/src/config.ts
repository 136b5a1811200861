import { env } from "@loom/runtime/config";
import { standaloneSettings } from "@loom/services/settings";
import { z } from "zod";

/** The events service run on its own (one Deployment in production). */
export const eventsConfigSchema = z.object({
  ...standaloneSettings("events"),
  /** Where stored events are published for every replica's followers; without it, only this process sees them live. */
  NATS_URL: env.url().optional(),
});
