import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { blobPathPrefix } from "@loom/blob-plane/exchange";
import { blobHttpHandler, remoteBlobs } from "@loom/blob-plane/http";
import { createHttpServer } from "@loom/server/turn-batched-response";
import { openBus } from "@loom/bus/open";
import { busReadiness, type Bus } from "@loom/bus/bus";
import { createLogger } from "@loom/telemetry/logger";
import { listen, startRpcServer, type RunningServer } from "@loom/server/rpc-server";
import { httpTransport } from "@loom/server/transports";
import { openAssistantsStore, wireAssistants } from "@loom/assistants/wiring";
import { openEventsStore, wireEvents } from "@loom/events/wiring";
import type { BillingSettings } from "@loom/identity/billing/service";
import { openIdentityStore, wireIdentity } from "@loom/identity/wiring";
import { openRunsStore, wireRuns, type RunSettings } from "@loom/runs/wiring";
import type { RunWorker } from "@loom/runs/worker";
import type { Model } from "@loom/runs/models/port";
import { storageSettings, type StorageSettings } from "@loom/storage/config";
import { openBlobStore, openStorageStore, wireStorage } from "@loom/storage/wiring";
import { dropDatabase, freshDatabaseName, testServers } from "@loom/testing/servers";
import { testTokenSecret } from "@loom/testing/tokens";
import { buildApp } from "../src/app.ts";
import { defaultLimits, type LimitSettings } from "../src/config.ts";
import { serviceClients } from "../src/clients.ts";
import { servicesStatus } from "../src/readiness.ts";

export interface TestStack {
  gatewayUrl: string;
  /** The run worker of the (single) runs service. */
  worker: RunWorker;
  /** The bus the services share (the in-process one when `memoryBus`). */
  bus: Bus;
  /**
   * Starts another gateway replica on the same identity service and bus;
   * `identityUrl`: reach identity there instead (a proxy in between);
   * `natsUrl`: its bus on that NATS server instead (one the test can stop).
   */
  addGateway(options?: { identityUrl?: string; natsUrl?: string }): Promise<string>;
  identityUrl: string;
  bootstrapKey: string;
  /** Stops the identity service and starts it again on the same port and store. */
  restartIdentity(): Promise<void>;
  /** Where the storage service keeps blob bytes (local disk). */
  blobDir: string;
  /** Stops the assistants service for good (a backing service that is down). */
  stopAssistants(): Promise<void>;
  close(): Promise<void>;
}

const serviceToken = "test-service-token-0123456789";
const bootstrapKey = "loom_test-bootstrap-key-0123456789abcdefghijklmnop";

/**
 * The real thing on ports 0: the identity service over HTTP (memory or
 * MongoDB store) and the gateway calling it through Connect.
 */
/** Run settings for tests: short leases and polls; echo unless a test says otherwise. */
export const testRunSettings: RunSettings = {
  RUN_TIMEOUT_MS: 30_000,
  RUN_LEASE_MS: 2_000,
  RUN_POLL_MS: 50,
  RUN_WORKER_CONCURRENCY: 16,
  RUN_MAX_PER_ORGANIZATION: 8,
  RUN_MAX_QUEUED_PER_ORGANIZATION: 1000,
  CHAT_TIMEOUT_MS: 30_000,
};

export async function startStack(
  store: "sqlite" | "mongo",
  options: {
    runs?: Partial<RunSettings>;
    model?: Model;
    /** the in-process bus even when NATS_URL is set */
    memoryBus?: boolean;
    /** the gateway's per-credential limits, over the production defaults */
    limits?: Partial<LimitSettings>;
    /** storage settings over the defaults (blobs on local disk in a fresh temporary directory) */
    storage?: Partial<StorageSettings>;
    /** identity's billing settings (Stripe); none: billing is not configured */
    billing?: BillingSettings;
    /** identity's caps on API keys; none: the defaults */
    apiKeyCaps?: { API_KEYS_PER_USER?: number; API_KEYS_PER_ORGANIZATION?: number };
  } = {},
): Promise<TestStack> {
  const logger = createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");
  const db = freshDatabaseName();
  const mongo = { url: store === "mongo" ? testServers.mongoUrl : undefined, db };
  if (store === "mongo" && !mongo.url) throw new Error("startStack('mongo') needs MONGODB_URL");

  const bus: Bus = await openBus(options.memoryBus ? undefined : testServers.natsUrl, "test-stack");
  const startIdentity = async (port = 0) => {
    const identityStore = await openIdentityStore(mongo);
    const { service, bootstrap } = await wireIdentity(
      identityStore,
      { BOOTSTRAP_EMAIL: "admin@example.com", BOOTSTRAP_API_KEY: bootstrapKey, ACCESS_TOKEN_SECRET: testTokenSecret, ...options.billing, ...options.apiKeyCaps },
      logger,
      bus,
    );
    const server = await startRpcServer({ services: [service], serviceToken, logger, port });
    await bootstrap();
    return server;
  };

  let identity: RunningServer = await startIdentity();
  const assistants = await startRpcServer({
    services: [await wireAssistants(await openAssistantsStore({ url: mongo.url, db: `${db}_assistants` }))],
    serviceToken,
    logger,
  });
  const events = await startRpcServer({
    services: [await wireEvents(await openEventsStore({ url: mongo.url, db: `${db}_events` }), bus, logger)],
    serviceToken,
    logger,
  });
  const runsWiring = await wireRuns(await openRunsStore({ url: mongo.url, db: `${db}_runs` }), { ...testRunSettings, ...options.runs }, {
    assistants: httpTransport(assistants.url, serviceToken),
    events: httpTransport(events.url, serviceToken),
    bus,
    logger,
    model: options.model,
  });
  const runs = await startRpcServer({ services: [runsWiring.service], serviceToken, logger });
  // Storage as its own process would run it: RPCs and the blob data plane on one port.
  const blobDir = await mkdtemp(join(tmpdir(), "loom-test-blobs-"));
  const storageConfig: StorageSettings = { ...z.object(storageSettings).parse({}), BLOB_DIR: blobDir, BLOB_SIGNING_KEY: "test-blob-signing-key-0123456789abcdef", ...options.storage };
  let publicUrl = "";
  const storageWiring = await wireStorage(await openStorageStore({ url: mongo.url, db: `${db}_storage` }), await openBlobStore(storageConfig), storageConfig, {
    logger,
    publicUrl: () => publicUrl,
  });
  const storage = await startRpcServer({
    services: [{ ...storageWiring.service, http: { prefix: blobPathPrefix, handle: blobHttpHandler(storageWiring.serveBlob, serviceToken, logger) } }],
    serviceToken,
    logger,
  });
  const gateways: RunningServer[] = [];
  const startGateway = async (identityUrl?: string, natsUrl = options.memoryBus ? undefined : testServers.natsUrl) => {
    // Each replica its own bus connection, as separate processes would have.
    const replicaBus = natsUrl ? await openBus(natsUrl, "test-gateway") : bus;
    const clients = serviceClients({
      identity: httpTransport(identityUrl ?? identity.url, serviceToken),
      assistants: httpTransport(assistants.url, serviceToken),
      runs: httpTransport(runs.url, serviceToken),
      events: httpTransport(events.url, serviceToken),
      storage: httpTransport(storage.url, serviceToken),
    });
    const blobs = remoteBlobs(storage.url, serviceToken);
    const { app } = buildApp({ clients, blobs, logger, bus: replicaBus, limits: { ...defaultLimits, ...options.limits }, billingRequired: options.billing?.BILLING_REQUIRED === true, readiness: async () => ({ ready: true, ...busReadiness(replicaBus), services: await servicesStatus({ identity: identity.url, assistants: assistants.url, runs: runs.url, events: events.url, storage: storage.url }) }) });
    const gateway = await listen(createHttpServer(app.callback()), 0, "127.0.0.1", async () => {
      if (replicaBus !== bus) await replicaBus.close();
    });
    gateways.push(gateway);
    return gateway;
  };
  const gateway = await startGateway();
  // Signed URLs point at the (first) gateway, which forwards them to storage.
  publicUrl = gateway.url;

  return {
    gatewayUrl: gateway.url,
    worker: runsWiring.worker,
    bus,
    addGateway: async (gatewayOptions) => (await startGateway(gatewayOptions?.identityUrl, gatewayOptions?.natsUrl)).url,
    identityUrl: identity.url,
    bootstrapKey,
    blobDir,
    stopAssistants: () => assistants.close(),
    async restartIdentity() {
      await identity.close();
      identity = await startIdentity(identity.port);
    },
    async close() {
      await Promise.all(gateways.map((g) => g.close()));
      await runs.close();
      await Promise.all([identity.close(), assistants.close(), events.close(), storage.close()]);
      await bus.close();
      await rm(blobDir, { recursive: true, force: true });
      if (mongo.url) {
        for (const name of [db, `${db}_assistants`, `${db}_events`, `${db}_runs`, `${db}_storage`]) await dropDatabase(mongo.url, name);
      }
    },
  };
}
