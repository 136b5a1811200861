import "./tracing.ts";
import { runService } from "@loom/kit/service-main";
import { identityConfigSchema } from "./config.ts";
import { openIdentityStore, wireIdentity } from "./wiring.ts";

const notes = { keeps: "identities", withoutNats: "gateways cannot hear of revoked keys, so they do not cache who a credential is" };
await runService("identity", identityConfigSchema, notes, async (config, { logger, bus }) => {
  const { service, bootstrapKey } = await wireIdentity(await openIdentityStore({ url: config.MONGODB_URL, db: config.MONGODB_DB }), config, logger, bus);
  if (bootstrapKey) logger.info(`bootstrap API key (shown once): ${bootstrapKey}`);
  return service;
});
