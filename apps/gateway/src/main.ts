import "./tracing.ts";
import { remoteBlobs } from "@loom/blob-plane/http";
import { loadConfig } from "@loom/runtime/config";
import { connectionLimitsFrom } from "@loom/server/connection-limits";
import { createHttpServer } from "@loom/server/turn-batched-response";
import { createLogger } from "@loom/telemetry/logger";
import { serveMetrics } from "@loom/server/metrics-server";
import { releaseMemoryWhenQuiet } from "@loom/runtime/release-memory-when-quiet";
import { listen } from "@loom/server/rpc-server";
import { failStartup, onShutdown } from "@loom/runtime/shutdown";
import { httpTransport } from "@loom/server/transports";
import { tracing } from "@loom/telemetry/tracing";
import { busReadiness } from "@loom/bus/bus";
import { createNatsBus } from "@loom/bus/nats";
import { buildApp } from "./app.ts";
import { serviceClients } from "./clients.ts";
import { gatewayConfigSchema } from "./config.ts";
import { servicesStatus } from "./readiness.ts";

const logger = createLogger("gateway");
try {
  const config = loadConfig(gatewayConfigSchema);
  logger.level = config.LOG_LEVEL;
  const clients = serviceClients({
    identity: httpTransport(config.IDENTITY_URL, config.SERVICE_TOKEN),
    assistants: httpTransport(config.ASSISTANTS_URL, config.SERVICE_TOKEN),
    runs: httpTransport(config.RUNS_URL, config.SERVICE_TOKEN),
    events: httpTransport(config.EVENTS_URL, config.SERVICE_TOKEN),
    storage: httpTransport(config.STORAGE_URL, config.SERVICE_TOKEN),
  });
  // Signed blob URLs point at the gateway; their bytes stream on to the storage service.
  const blobs = remoteBlobs(config.STORAGE_URL, config.SERVICE_TOKEN);
  // Only a shared bus can carry revocations from identity; an in-process one could not.
  const bus = config.NATS_URL ? await createNatsBus(config.NATS_URL, "gateway", logger) : undefined;
  if (!bus) logger.info("NATS_URL is not set: every request is authenticated with the identity service");
  const services = { identity: config.IDENTITY_URL, assistants: config.ASSISTANTS_URL, runs: config.RUNS_URL, events: config.EVENTS_URL, storage: config.STORAGE_URL };
  // A service that is down makes its own requests 503, and a lost NATS delays revocations; neither takes the gateway replicas out of rotation.
  const readiness = async () => ({ ready: true, services: await servicesStatus(services), ...busReadiness(bus) });
  const { app } = buildApp({ clients, blobs, logger, bus, limits: config, billingRequired: config.BILLING_REQUIRED, readiness });
  const server = await listen(createHttpServer(app.callback(), connectionLimitsFrom(config), logger), config.PORT, config.HOST);
  // Apart from the public port: scrapers reach it, clients do not.
  const metrics = await serveMetrics(config.METRICS_PORT, config.HOST);
  const memory = releaseMemoryWhenQuiet();
  // Before the lines that say it is up: a SIGTERM sent on reading them must find the graceful shutdown in place.
  onShutdown(logger, async () => {
    memory.stop();
    await server.close();
    await bus?.close();
    await metrics.close();
    await tracing().shutdown();
  });
  logger.info({ url: server.url }, "gateway listening");
  logger.info({ url: `${metrics.url}/metrics` }, "metrics listening");
} catch (error) {
  failStartup(logger, error);
}
