import { openBus } from "@loom/kit/bus-open";
import { loadConfig } from "@loom/kit/config";
import { createLogger } from "@loom/kit/logger";
import { startRpcServer } from "@loom/kit/rpc-server";
import { failStartup, onShutdown } from "@loom/kit/shutdown";
import { httpTransport } from "@loom/kit/transports";
import { runsConfigSchema } from "./config.ts";
import { openRunsStore, wireRuns } from "./wiring.ts";

const logger = createLogger("runs");
try {
  const config = loadConfig(runsConfigSchema);
  logger.level = config.LOG_LEVEL;
  if (!config.MONGODB_URL) logger.warn("MONGODB_URL is not set: keeping runs in memory, they are lost on restart");
  if (!config.NATS_URL) logger.warn("NATS_URL is not set: cancel reaches only this replica's worker");
  const bus = await openBus(config.NATS_URL, "runs");
  const { service } = await wireRuns(await openRunsStore({ url: config.MONGODB_URL, db: config.MONGODB_DB }), config, {
    assistants: httpTransport(config.ASSISTANTS_URL, config.SERVICE_TOKEN),
    events: httpTransport(config.EVENTS_URL, config.SERVICE_TOKEN),
    bus,
    logger,
  });
  const server = await startRpcServer({ services: [service], serviceToken: config.SERVICE_TOKEN, logger, port: config.PORT, host: config.HOST });
  logger.info({ url: server.url }, "runs service listening");
  onShutdown(logger, async () => {
    await server.close();
    await bus.close();
  });
} catch (error) {
  failStartup(logger, error);
}
