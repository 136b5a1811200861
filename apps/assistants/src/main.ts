import { loadConfig } from "@loom/kit/config";
import { createLogger } from "@loom/kit/logger";
import { startRpcServer } from "@loom/kit/rpc-server";
import { failStartup, onShutdown } from "@loom/kit/shutdown";
import { assistantsConfigSchema } from "./config.ts";
import { openAssistantsStore, wireAssistants } from "./wiring.ts";

const logger = createLogger("assistants");
try {
  const config = loadConfig(assistantsConfigSchema);
  logger.level = config.LOG_LEVEL;
  if (!config.MONGODB_URL) logger.warn("MONGODB_URL is not set: keeping assistants in memory, they are lost on restart");
  const service = await wireAssistants(await openAssistantsStore({ url: config.MONGODB_URL, db: config.MONGODB_DB }));
  const server = await startRpcServer({ services: [service], serviceToken: config.SERVICE_TOKEN, logger, port: config.PORT, host: config.HOST });
  logger.info({ url: server.url }, "assistants service listening");
  onShutdown(logger, server.close);
} catch (error) {
  failStartup(logger, error);
}
