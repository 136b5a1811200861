import { blobPathPrefix } from "@loom/blob-plane/exchange";
import { blobHttpHandler } from "@loom/blob-plane/http";
import type { ServiceProcess } from "@loom/server/run-service";
import { services } from "@loom/services/registry";
import { storageConfigSchema } from "./config.ts";
import { openBlobStore, openStorageStore, wireStorage } from "./wiring.ts";

/** The storage service run on its own, from its settings: started by main.ts and by the test stack. */
export const serviceProcess: ServiceProcess<typeof storageConfigSchema> = {
  name: "storage",
  schema: storageConfigSchema,
  notes: services.storage,
  wire: async (config, { logger }) => {
    const { service, serveBlob } = await wireStorage(
      await openStorageStore({ url: config.MONGODB_URL, db: config.MONGODB_DB }),
      await openBlobStore(config),
      config,
      {
        logger,
        publicUrl: () => config.PUBLIC_URL,
      },
    );
    // The data plane beside the RPCs, on the same port: the gateway forwards every /blobs/ request here.
    return {
      ...service,
      http: { prefix: blobPathPrefix, handle: blobHttpHandler(serveBlob, config.SERVICE_TOKEN, logger) },
    };
  },
};
