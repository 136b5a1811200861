import type { ServiceProcess } from "@loom/server/run-service";
import { services } from "@loom/services/registry";
import { eventsConfigSchema } from "./config.ts";
import { openEventsStore, wireEvents } from "./wiring.ts";

/** The events service run on its own, from its settings: started by main.ts and by the test stack. */
export const serviceProcess: ServiceProcess<typeof eventsConfigSchema> = {
  name: "events",
  schema: eventsConfigSchema,
  notes: services.events,
  wire: async (config, { logger, bus }) =>
    wireEvents(await openEventsStore({ url: config.MONGODB_URL, db: config.MONGODB_DB }), bus, logger),
};
