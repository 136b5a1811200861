import "./tracing.ts";
import { runService } from "@loom/server/run-service";
import { eventsConfigSchema } from "./config.ts";
import { openEventsStore, wireEvents } from "./wiring.ts";

await runService("events", eventsConfigSchema, { keeps: "events", withoutNats: "live events reach followers of this process only" }, async (config, { logger, bus }) =>
  wireEvents(await openEventsStore({ url: config.MONGODB_URL, db: config.MONGODB_DB }), bus, logger),
);
