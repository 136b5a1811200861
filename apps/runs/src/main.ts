import "./tracing.ts";
import { runService } from "@loom/server/run-service";
import { httpTransport } from "@loom/server/transports";
import { runsConfigSchema } from "./config.ts";
import { openRunsStore, wireRuns } from "./wiring.ts";

await runService("runs", runsConfigSchema, { keeps: "runs", withoutNats: "cancel reaches only this replica's worker" }, async (config, { logger, bus }) => {
  const assistants = httpTransport(config.ASSISTANTS_URL, config.SERVICE_TOKEN);
  const events = httpTransport(config.EVENTS_URL, config.SERVICE_TOKEN);
  const { service } = await wireRuns(await openRunsStore({ url: config.MONGODB_URL, db: config.MONGODB_DB }), config, { assistants, events, bus, logger });
  return service;
});
