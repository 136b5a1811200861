import { z } from "zod";
import { env } from "@loom/kit/config";

/** The events service run on its own (one Deployment in production). */
export const eventsConfigSchema = z.object({
  PORT: env.port(8084),
  HOST: z.string().default("0.0.0.0"),
  SERVICE_TOKEN: z.string().min(16, "must be at least 16 characters"),
  MONGODB_URL: env.url().optional(),
  MONGODB_DB: z.string().default("loom_events"),
  /** Where stored events are published for every replica's followers; without it, only this process sees them live. */
  NATS_URL: env.url().optional(),
  LOG_LEVEL: env.logLevel(),
});
