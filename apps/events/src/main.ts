import { loadConfig } from "@loom/kit/config";
import { createLogger } from "@loom/kit/logger";
import { openBus } from "@loom/kit/bus-open";
import { startRpcServer } from "@loom/kit/rpc-server";
import { failStartup, onShutdown } from "@loom/kit/shutdown";
import { eventsConfigSchema } from "./config.ts";
import { openEventsStore, wireEvents } from "./wiring.ts";

const logger = createLogger("events");
try {
  const config = loadConfig(eventsConfigSchema);
  logger.level = config.LOG_LEVEL;
  if (!config.MONGODB_URL) logger.warn("MONGODB_URL is not set: keeping events in memory, they are lost on restart");
  if (!config.NATS_URL) logger.warn("NATS_URL is not set: live events reach followers of this process only");
  const store = await openEventsStore({ url: config.MONGODB_URL, db: config.MONGODB_DB });
  const bus = await openBus(config.NATS_URL, "events");
  const service = await wireEvents(store, bus, logger);
  const server = await startRpcServer({ services: [service], serviceToken: config.SERVICE_TOKEN, logger, port: config.PORT, host: config.HOST });
  logger.info({ url: server.url }, "events service listening");
  onShutdown(logger, async () => {
    await server.close();
    await bus.close();
  });
} catch (error) {
  failStartup(logger, error);
}
