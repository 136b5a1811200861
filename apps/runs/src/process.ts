import type { RpcService } from "@loom/server/rpc-service";
import type { ServiceProcess } from "@loom/server/run-service";
import { httpTransport } from "@loom/server/transports";
import { services } from "@loom/services/registry";
import { runsConfigSchema } from "./config.ts";
import type { Model } from "./models/port.ts";
import { openRunsStore, wireRuns } from "./wiring.ts";
import type { RunWorker } from "./worker.ts";

/** The runs service as its process holds it: with its worker, which tests watch. */
export type WiredRunsService = RpcService & { worker: RunWorker };

/**
 * The runs service run on its own, from its settings: started by main.ts and
 * by the test stack, which may give it a model of its own (`model`).
 */
export const serviceProcess: ServiceProcess<typeof runsConfigSchema, { model?: Model }> = {
  name: "runs",
  schema: runsConfigSchema,
  notes: services.runs,
  wire: async (config, { logger, bus, model }): Promise<WiredRunsService> => {
    const assistants = httpTransport(config.ASSISTANTS_URL, config.SERVICE_TOKEN);
    const events = httpTransport(config.EVENTS_URL, config.SERVICE_TOKEN);
    const tools = httpTransport(config.TOOLS_URL, config.SERVICE_TOKEN);
    const knowledge = httpTransport(config.KNOWLEDGE_URL, config.SERVICE_TOKEN);
    const { service, worker } = await wireRuns(
      await openRunsStore({ url: config.MONGODB_URL, db: config.MONGODB_DB }),
      config,
      { assistants, events, tools, knowledge, bus, logger, model },
    );
    return { ...service, worker };
  },
};
