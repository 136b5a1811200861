import { z } from "zod";
import { env } from "@loom/kit/config";

export const gatewayConfigSchema = z.object({
  PORT: env.port(8080),
  HOST: z.string().default("0.0.0.0"),
  SERVICE_TOKEN: z.string().min(16, "must be at least 16 characters"),
  IDENTITY_URL: env.url(),
  LOG_LEVEL: env.logLevel(),
});
