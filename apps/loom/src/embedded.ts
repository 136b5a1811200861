import { randomBytes } from "node:crypto";
import { buildApp } from "@loom/gateway/app";
import { oneTransport, serviceClients } from "@loom/gateway/clients";
import { openAssistantsStore, wireAssistants } from "@loom/assistants/wiring";
import { openEventsStore, wireEvents } from "@loom/events/wiring";
import { openIdentityStore, wireIdentity } from "@loom/identity/wiring";
import { openRunsStore, wireRuns } from "@loom/runs/wiring";
import { openBlobStore, openStorageStore, wireStorage } from "@loom/storage/wiring";
import { openBus } from "@loom/kit/bus-open";
import { createHttpServer } from "@loom/kit/http-server";
import type { Logger } from "@loom/kit/logger";
import { allReady, listen, type RunningServer } from "@loom/kit/rpc-server";
import { inProcessTransport } from "@loom/kit/transports";
import type { LoomConfig } from "./config.ts";

export interface EmbeddedLoom {
  server: RunningServer;
  /** The generated bootstrap key, on a first start only. */
  bootstrapKey: string | undefined;
}

/**
 * Every service and the gateway in one process. Services are called through
 * an in-process Connect transport: the same contracts and interceptors as
 * over HTTP, without the sockets.
 */
export async function startEmbedded(config: LoomConfig, logger: Logger): Promise<EmbeddedLoom> {
  const serviceToken = randomBytes(24).toString("base64url");
  const identityStore = await openIdentityStore({ url: config.MONGODB_URL, db: `${config.MONGODB_DB_PREFIX}identity` });
  const bus = await openBus(config.NATS_URL, "loom");
  const identity = await wireIdentity(identityStore, config, logger.child({ service: "identity" }), bus);
  const assistants = await wireAssistants(await openAssistantsStore({ url: config.MONGODB_URL, db: `${config.MONGODB_DB_PREFIX}assistants` }));
  const events = await wireEvents(await openEventsStore({ url: config.MONGODB_URL, db: `${config.MONGODB_DB_PREFIX}events` }), bus, logger.child({ service: "events" }));
  // The runs service calls assistants and events, in process like everything else.
  const peers = inProcessTransport([assistants, events], serviceToken, logger);
  const runs = await wireRuns(await openRunsStore({ url: config.MONGODB_URL, db: `${config.MONGODB_DB_PREFIX}runs` }), config, {
    assistants: peers,
    events: peers,
    bus,
    logger: logger.child({ service: "runs" }),
  });
  // Signed URLs point at PUBLIC_URL, or at this process's own address once it listens (PORT may be 0).
  let listening: RunningServer | undefined;
  const storage = await wireStorage(await openStorageStore({ url: config.MONGODB_URL, db: `${config.MONGODB_DB_PREFIX}storage` }), await openBlobStore(config), config, {
    logger: logger.child({ service: "storage" }),
    publicUrl: () => config.PUBLIC_URL ?? listening!.url,
  });
  const services = [identity.service, assistants, events, runs.service, storage.service];

  const clients = serviceClients(oneTransport(inProcessTransport(services, serviceToken, logger)));
  const { app } = buildApp({ clients, blobs: storage.serveBlob, bus, limits: config, logger: logger.child({ service: "gateway" }), readiness: async () => ({ ready: await allReady(services) }) });
  const server = (listening = await listen(createHttpServer(app.callback()), config.PORT, config.HOST, async () => {
    await Promise.all(services.map((s) => s.close()));
    await bus.close();
  }));
  return { server, bootstrapKey: identity.bootstrapKey };
}
