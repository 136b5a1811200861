import "./tracing.ts";
import { createNatsBus } from "@loom/bus/nats";
import { runProcess } from "@loom/runtime/run-process";
import { connectionLimitsFrom } from "@loom/server/connection-limits";
import { serveMetrics } from "@loom/server/metrics-server";
import { listen } from "@loom/server/rpc-server";
import { createHttpServer } from "@loom/server/turn-batched-response";
import { gatewayConfigSchema } from "./config.ts";
import { buildGateway } from "./process.ts";

await runProcess("gateway", gatewayConfigSchema, async (config, logger) => {
  // Only a shared bus can carry revocations from identity; an in-process one could not.
  const bus = config.NATS_URL ? await createNatsBus(config.NATS_URL, "gateway", logger) : undefined;
  if (!bus) logger.info("NATS_URL is not set: every request is authenticated with the identity service");
  const { app } = buildGateway(config, { logger, bus });
  const server = await listen(
    createHttpServer(app.callback(), connectionLimitsFrom(config), logger),
    config.PORT,
    config.HOST,
  );
  // Apart from the public port: scrapers reach it, clients do not.
  const metrics = await serveMetrics(config.METRICS_PORT, config.HOST);
  return {
    close: async () => {
      await server.close();
      await bus?.close();
      await metrics.close();
    },
    announce: () => {
      logger.info({ url: server.url }, "gateway listening");
      logger.info({ url: `${metrics.url}/metrics` }, "metrics listening");
    },
  };
});
