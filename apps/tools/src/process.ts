import type { Resolve } from "@loom/outbound/check";
import type { ServiceProcess } from "@loom/server/run-service";
import { services } from "@loom/services/registry";
import { toolsConfigSchema } from "./config.ts";
import { callLimits, openToolsStore, wireTools } from "./wiring.ts";

/**
 * The tools service run on its own, from its settings: started by main.ts and by the test stack, which may give it a
 * resolver of its own (`resolve`: names mapped to addresses without DNS).
 */
export const serviceProcess: ServiceProcess<typeof toolsConfigSchema, { resolve?: Resolve }> = {
  name: "tools",
  schema: toolsConfigSchema,
  notes: services.tools,
  // The split deployment: loopback is a service's own pod or host, never a user's tool server.
  wire: async (config, { logger, resolve }) =>
    wireTools(
      await openToolsStore({ url: config.MONGODB_URL, db: config.MONGODB_DB }),
      {
        secrets: config,
        limits: { ...callLimits(config, { allowLoopback: false }), ...(resolve ? { resolve } : {}) },
        sweepEveryMs: config.TOOL_RUN_SWEEP_INTERVAL_MS,
      },
      logger,
    ),
};
