import { loadConfig } from "@loom/kit/config";
import { createLogger } from "@loom/kit/logger";
import { openBus } from "@loom/kit/bus-open";
import { startRpcServer } from "@loom/kit/rpc-server";
import { failStartup, onShutdown } from "@loom/kit/shutdown";
import { identityConfigSchema } from "./config.ts";
import { openIdentityStore, wireIdentity } from "./wiring.ts";

const logger = createLogger("identity");
try {
  const config = loadConfig(identityConfigSchema);
  logger.level = config.LOG_LEVEL;
  if (!config.MONGODB_URL) logger.warn("MONGODB_URL is not set: keeping identities in memory, they are lost on restart");
  const store = await openIdentityStore({ url: config.MONGODB_URL, db: config.MONGODB_DB });
  const bus = await openBus(config.NATS_URL, "identity");
  const { service, bootstrapKey } = await wireIdentity(store, config, logger, bus);
  if (bootstrapKey) logger.info(`bootstrap API key (shown once): ${bootstrapKey}`);
  const server = await startRpcServer({ services: [service], serviceToken: config.SERVICE_TOKEN, logger, port: config.PORT, host: config.HOST });
  logger.info({ url: server.url }, "identity service listening");
  onShutdown(logger, async () => {
    await server.close();
    await bus.close();
  });
} catch (error) {
  failStartup(logger, error);
}
