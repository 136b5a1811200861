import { z } from "zod";
import { env, serviceSettings } from "@loom/kit/config";

export const gatewayConfigSchema = z.object({
  ...serviceSettings(8080),
  IDENTITY_URL: env.url(),
  ASSISTANTS_URL: env.url(),
  RUNS_URL: env.url(),
  EVENTS_URL: env.url(),
  /** Key revocations arrive here; with it the gateway caches who a credential is (see README). */
  NATS_URL: env.url().optional(),
});
