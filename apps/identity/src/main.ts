import "./tracing.ts";
import { runService } from "@loom/server/run-service";
import { identityConfigSchema } from "./config.ts";
import { openIdentityStore, wireIdentity } from "./wiring.ts";

const notes = { keeps: "identities", withoutNats: "gateways cannot hear of revoked keys, so they do not cache who a credential is" };
await runService("identity", identityConfigSchema, notes, async (config, { logger, bus }) => {
  const { service, bootstrap } = await wireIdentity(await openIdentityStore({ url: config.MONGODB_URL, db: config.MONGODB_DB }), config, logger, bus);
  return {
    ...service,
    // Once the process listens: a key made before a start that then failed would never be printed.
    started: async () => {
      const bootstrapKey = await bootstrap();
      if (bootstrapKey) logger.info(`bootstrap API key (shown once): ${bootstrapKey}`);
    },
  };
});
