import "./tracing.ts";
import { blobPathPrefix } from "@loom/blob-plane/exchange";
import { blobHttpHandler } from "@loom/blob-plane/http";
import { runService } from "@loom/server/run-service";
import { storageConfigSchema } from "./config.ts";
import { openBlobStore, openStorageStore, wireStorage } from "./wiring.ts";

await runService("storage", storageConfigSchema, { keeps: "buckets and assets" }, async (config, { logger }) => {
  const { service, serveBlob } = await wireStorage(await openStorageStore({ url: config.MONGODB_URL, db: config.MONGODB_DB }), await openBlobStore(config), config, {
    logger,
    publicUrl: () => config.PUBLIC_URL,
  });
  // The data plane beside the RPCs, on the same port: the gateway forwards every /blobs/ request here.
  return { ...service, http: { prefix: blobPathPrefix, handle: blobHttpHandler(serveBlob, config.SERVICE_TOKEN, logger) } };
});
