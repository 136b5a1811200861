import { loadConfig } from "@loom/kit/config";
import { createLogger } from "@loom/kit/logger";
import { failStartup, onShutdown } from "@loom/kit/shutdown";
import { loomConfigSchema } from "./config.ts";
import { startEmbedded } from "./embedded.ts";

const logger = createLogger("loom");
try {
  const config = loadConfig(loomConfigSchema);
  logger.level = config.LOG_LEVEL;
  if (!config.MONGODB_URL) logger.info("MONGODB_URL is not set: data lives in memory and is gone on restart");
  const { server, bootstrapKey } = await startEmbedded(config, logger);
  logger.info({ url: server.url }, `Loom is listening on ${server.url}`);
  if (bootstrapKey) {
    logger.info(`bootstrap API key (shown once): ${bootstrapKey}`);
    logger.info(`try: curl -H "Authorization: Bearer ${bootstrapKey}" ${server.url}/users`);
  }
  onShutdown(logger, server.close);
} catch (error) {
  failStartup(logger, error);
}
