import type { ServiceProcess } from "@loom/server/run-service";
import { services } from "@loom/services/registry";
import { identityConfigSchema } from "./config.ts";
import { openIdentityStore, wireIdentity } from "./wiring.ts";

/** The identity service run on its own, from its settings: started by main.ts and by the test stack. */
export const serviceProcess: ServiceProcess<typeof identityConfigSchema> = {
  name: "identity",
  schema: identityConfigSchema,
  notes: services.identity,
  wire: async (config, { logger, bus }) => {
    const { service, bootstrap } = await wireIdentity(
      await openIdentityStore({ url: config.MONGODB_URL, db: config.MONGODB_DB }),
      config,
      logger,
      bus,
    );
    return {
      ...service,
      // Once the process listens: a key made before a start that then failed would never be printed.
      started: async () => {
        const bootstrapKey = await bootstrap();
        if (bootstrapKey) logger.info(`bootstrap API key (shown once): ${bootstrapKey}`);
      },
    };
  },
};
