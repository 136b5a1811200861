import type { Resolve } from "@loom/outbound/check";
import type { ServiceProcess } from "@loom/server/run-service";
import { services } from "@loom/services/registry";
import { toolsConfigSchema } from "./config.ts";
import type { SecretValues } from "./secret-values.ts";
import { callLimits, openToolsStore, wireTools } from "./wiring.ts";

/**
 * The tools service run on its own, from its settings: started by main.ts and by the test stack, which may give it a
 * resolver of its own (`resolve`: names mapped to addresses without DNS) and secret values of its own (`secrets`).
 */
export const serviceProcess: ServiceProcess<typeof toolsConfigSchema, { resolve?: Resolve; secrets?: SecretValues }> = {
  name: "tools",
  schema: toolsConfigSchema,
  notes: services.tools,
  // The split deployment: loopback is a service's own pod or host, never a user's tool server.
  wire: async (config, { resolve, secrets }) =>
    wireTools(
      await openToolsStore({ url: config.MONGODB_URL, db: config.MONGODB_DB }),
      { ...callLimits(config, { allowLoopback: false }), ...(resolve ? { resolve } : {}) },
      secrets,
    ),
};
