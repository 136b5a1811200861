import { createServer } from "node:http";
import { loadConfig } from "@loom/kit/config";
import { createLogger } from "@loom/kit/logger";
import { listen } from "@loom/kit/rpc-server";
import { failStartup, onShutdown } from "@loom/kit/shutdown";
import { httpTransport } from "@loom/kit/transports";
import { buildApp } from "./app.ts";
import { serviceClients } from "./clients.ts";
import { gatewayConfigSchema } from "./config.ts";
import { servicesReady } from "./readiness.ts";

const logger = createLogger("gateway");
try {
  const config = loadConfig(gatewayConfigSchema);
  logger.level = config.LOG_LEVEL;
  const clients = serviceClients({ identity: httpTransport(config.IDENTITY_URL, config.SERVICE_TOKEN) });
  const { app } = buildApp({ clients, logger, ready: () => servicesReady([config.IDENTITY_URL]) });
  const server = await listen(createServer(app.callback()), config.PORT, config.HOST);
  logger.info({ url: server.url }, "gateway listening");
  onShutdown(logger, server.close);
} catch (error) {
  failStartup(logger, error);
}
