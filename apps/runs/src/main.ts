import { runService } from "@loom/kit/service-main";
import { httpTransport } from "@loom/kit/transports";
import { runsConfigSchema } from "./config.ts";
import { openRunsStore, wireRuns } from "./wiring.ts";

await runService({
  name: "runs",
  schema: runsConfigSchema,
  keeps: "runs",
  withoutNats: "cancel reaches only this replica's worker",
  async wire(config, { logger, bus }) {
    const { service } = await wireRuns(await openRunsStore({ url: config.MONGODB_URL, db: config.MONGODB_DB }), config, {
      assistants: httpTransport(config.ASSISTANTS_URL, config.SERVICE_TOKEN),
      events: httpTransport(config.EVENTS_URL, config.SERVICE_TOKEN),
      bus,
      logger,
    });
    return service;
  },
});
