import { z } from "zod";
import { env } from "@loom/kit/config";

export const gatewayConfigSchema = z.object({
  PORT: env.port(8080),
  HOST: z.string().default("0.0.0.0"),
  SERVICE_TOKEN: z.string().min(16, "must be at least 16 characters"),
  IDENTITY_URL: env.url(),
  ASSISTANTS_URL: env.url(),
  RUNS_URL: env.url(),
  EVENTS_URL: env.url(),
  /** Key revocations arrive here; with it the gateway caches who a credential is (see README). */
  NATS_URL: env.url().optional(),
  LOG_LEVEL: env.logLevel(),
});
