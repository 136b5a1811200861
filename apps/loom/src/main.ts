import "./tracing.ts";
import { runProcess } from "@loom/runtime/run-process";
import { serveMetrics } from "@loom/server/metrics-server";
import { loomConfigSchema } from "./config.ts";
import { startEmbedded } from "./embedded.ts";

await runProcess("loom", loomConfigSchema, async (config, logger) => {
  const { server, finishStart, dataDir } = await startEmbedded(config, logger);
  // Before the line that says Loom is up: whoever waits for it can scrape at once.
  const metrics = config.METRICS_PORT === undefined ? undefined : await serveMetrics(config.METRICS_PORT, config.HOST);
  // Last: nothing after it can fail the start, so the key it prints once is never lost with a failed one.
  const bootstrapKey = await finishStart();
  return {
    close: async () => {
      await server.close();
      await metrics?.close();
    },
    announce: () => {
      logger.info(
        { data_dir: dataDir.path, state: dataDir.state },
        config.MONGODB_URL
          ? `records in MongoDB; data directory ${dataDir.path} (${dataDir.state}) keeps the signing key${config.S3_BUCKET || config.BLOB_DIR ? "" : " and the blobs"}`
          : `data directory ${dataDir.path} (${dataDir.state === "new" ? "new: created" : "reopened"})`,
      );
      if (metrics) logger.info({ url: `${metrics.url}/metrics` }, `metrics at ${metrics.url}/metrics`);
      logger.info({ url: server.url }, `Loom is listening on ${server.url}`);
      if (bootstrapKey) {
        logger.info(`bootstrap API key (shown once): ${bootstrapKey}`);
        logger.info(`try: curl -H "Authorization: Bearer ${bootstrapKey}" ${server.url}/users`);
      }
    },
  };
});
