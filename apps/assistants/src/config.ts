import { z } from "zod";
import { env } from "@loom/kit/config";

/** The assistants service run on its own (one Deployment in production). */
export const assistantsConfigSchema = z.object({
  PORT: env.port(8082),
  HOST: z.string().default("0.0.0.0"),
  SERVICE_TOKEN: z.string().min(16, "must be at least 16 characters"),
  MONGODB_URL: env.url().optional(),
  MONGODB_DB: z.string().default("loom_assistants"),
  LOG_LEVEL: env.logLevel(),
});
