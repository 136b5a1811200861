import { randomBytes } from "node:crypto";
import { openAssistantsStore, wireAssistants } from "@loom/assistants/wiring";
import { busReadiness } from "@loom/bus/bus";
import { openBus } from "@loom/bus/open";
import { openEventsStore, wireEvents } from "@loom/events/wiring";
import { buildApp } from "@loom/gateway/app";
import { oneTransport, serviceClients } from "@loom/gateway/clients";
import { openIdentityStore, wireIdentity } from "@loom/identity/wiring";
import { openKnowledgeStores, wireKnowledge } from "@loom/knowledge/wiring";
import { openRunsStore, wireRuns } from "@loom/runs/wiring";
import { connectionLimitsFrom } from "@loom/server/connection-limits";
import { heldUntil } from "@loom/server/held-until";
import { allReady, listen, type RunningServer } from "@loom/server/rpc-server";
import type { RpcService } from "@loom/server/rpc-service";
import { inProcessTransport } from "@loom/server/transports";
import { createHttpServer } from "@loom/server/turn-batched-response";
import { type ServiceName, serviceNames } from "@loom/services/registry";
import { openBlobStore, openStorageStore, wireStorage } from "@loom/storage/wiring";
import { sharedSqlite } from "@loom/store/sqlite";
import type { Logger } from "@loom/telemetry/logger";
import { callLimits, openToolsStore, wireTools } from "@loom/tools/wiring";
import type { LoomConfig } from "./config.ts";
import { type DataDir, openDataDir } from "./data-dir.ts";

export interface EmbeddedLoom {
  server: RunningServer;
  /**
   * Ends the start: makes the first user, organization and key on a first
   * start (identity's `bootstrap`), then lets in the requests held since the
   * listener opened; resolves the generated key. Called last, once everything
   * else has started, so a failed start never loses a key it did not print.
   */
  finishStart: () => Promise<string | undefined>;
  dataDir: DataDir;
}

/**
 * Every service and the gateway in one process. Services are called through
 * an in-process Connect transport: the same contracts and interceptors as
 * over HTTP, without the sockets.
 */
export async function startEmbedded(config: LoomConfig, logger: Logger): Promise<EmbeddedLoom> {
  const serviceToken = randomBytes(24).toString("base64url");
  const dataDir = openDataDir(config.LOOM_DATA_DIR, { records: !config.MONGODB_URL, logger });
  // Once, loudly: from then on every call answers 503 and /readyz is not ready, until a restart (kit `DatabaseFailed`).
  dataDir.sqlite?.afterFailure((failure) =>
    logger.fatal(
      { err: failure },
      `the database ${dataDir.path}/loom.db failed: requests answer 503 and /readyz is not ready; restart Loom, which recovers the database from its log`,
    ),
  );
  try {
    return await startServices(config, logger, serviceToken, dataDir);
  } catch (error) {
    await dataDir.close();
    throw error;
  }
}

async function startServices(
  config: LoomConfig,
  logger: Logger,
  serviceToken: string,
  dataDir: DataDir,
): Promise<EmbeddedLoom> {
  // Every service's tables in the one file; each store's close leaves it open, the data directory closes it last.
  const store = (service: ServiceName) => ({
    url: config.MONGODB_URL,
    db: `${config.MONGODB_DB_PREFIX}${service}`,
    sqlite: dataDir.sqlite && sharedSqlite(dataDir.sqlite),
  });
  const identityStore = await openIdentityStore(store("identity"));
  const bus = await openBus(config.NATS_URL, "loom", logger);
  const identity = await wireIdentity(identityStore, config, logger.child({ service: "identity" }), bus);
  // Signed URLs point at PUBLIC_URL, or at this process's own address once it listens (PORT may be 0).
  let listening: RunningServer | undefined;
  const storageSettings = {
    ...config,
    BLOB_DIR: config.BLOB_DIR ?? dataDir.blobDir,
    BLOB_SIGNING_KEY: config.BLOB_SIGNING_KEY ?? dataDir.signingKey,
  };
  const storage = await wireStorage(
    await openStorageStore(store("storage")),
    await openBlobStore(storageSettings),
    storageSettings,
    {
      logger: logger.child({ service: "storage" }),
      publicUrl: () => config.PUBLIC_URL ?? listening!.url,
    },
  );
  // The knowledge service asks storage whether a knowledge base's buckets are the organization's.
  const knowledge = await wireKnowledge(await openKnowledgeStores(store("knowledge")), config, {
    storage: inProcessTransport([storage.service], serviceToken, logger),
    logger: logger.child({ service: "knowledge" }),
  });
  // The runs service here answers after the durability of the same database (one SQLite file, or MongoDB's
  // acknowledged writes): the events its worker appends need not wait for the disk before it goes on.
  const events = await wireEvents(await openEventsStore(store("events")), bus, logger.child({ service: "events" }), {
    runLogsCoveredByRuns: true,
  });
  const tools = await wireTools(
    await openToolsStore(store("tools")),
    {
      secrets: { ...config, SECRETS_KEY: config.SECRETS_KEY ?? Buffer.from(dataDir.secretsKey, "base64") },
      // The all-in-one allows loopback: a tool server on the same machine is its common case.
      limits: callLimits(config, { allowLoopback: true }),
      sweepEveryMs: config.TOOL_RUN_SWEEP_INTERVAL_MS,
    },
    logger.child({ service: "tools" }),
  );
  // The assistants service asks the knowledge and tools services whether an assistant's knowledge bases and tools exist.
  const assistants = await wireAssistants(await openAssistantsStore(store("assistants")), {
    knowledge: inProcessTransport([knowledge], serviceToken, logger),
    tools: inProcessTransport([tools], serviceToken, logger),
  });
  // The runs service calls assistants, events, tools and knowledge, in process like everything else.
  const peers = inProcessTransport([assistants, events, tools, knowledge], serviceToken, logger);
  const runs = await wireRuns(await openRunsStore(store("runs")), config, {
    assistants: peers,
    events: peers,
    tools: peers,
    knowledge: peers,
    bus,
    logger: logger.child({ service: "runs" }),
  });
  // Every service of the registry, wired: one missing here fails the typecheck.
  const wired: Record<ServiceName, RpcService> = {
    identity: identity.service,
    assistants,
    runs: runs.service,
    events,
    storage: storage.service,
    tools,
    knowledge,
  };
  const services = serviceNames.map((name) => wired[name]);

  const clients = serviceClients(oneTransport(inProcessTransport(services, serviceToken, logger)));
  const { app } = buildApp({
    clients,
    blobs: storage.serveBlob,
    bus,
    limits: config,
    billingRequired: config.BILLING_REQUIRED,
    // The console uploads and downloads straight to S3 when signed URLs point there.
    consoleConnectOrigins: storage.signedUrlOrigin ? [storage.signedUrlOrigin] : [],
    logger: logger.child({ service: "gateway" }),
    readiness: async () => ({ ready: await allReady(services), ...busReadiness(bus) }),
  });
  const started = Promise.withResolvers<void>();
  const server = (listening = await listen(
    createHttpServer(heldUntil(started.promise, app.callback()), connectionLimitsFrom(config), logger),
    config.PORT,
    config.HOST,
    async () => {
      await Promise.all(services.map((s) => s.close()));
      await bus.close();
      await dataDir.close();
    },
  ));
  const finishStart = async () => {
    const bootstrapKey = await identity.bootstrap();
    started.resolve();
    return bootstrapKey;
  };
  return { server, finishStart, dataDir };
}
