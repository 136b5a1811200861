import { runService } from "@loom/kit/service-main";
import { storageConfigSchema } from "./config.ts";
import { openBlobStore, openStorageStore, wireStorage } from "./wiring.ts";

await runService("storage", storageConfigSchema, { keeps: "buckets and assets" }, async (config, { logger }) => {
  const { service } = await wireStorage(await openStorageStore({ url: config.MONGODB_URL, db: config.MONGODB_DB }), openBlobStore(config), config, {
    logger,
    publicUrl: () => config.PUBLIC_URL,
  });
  return service;
});
