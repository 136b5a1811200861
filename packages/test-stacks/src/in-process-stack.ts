import { mkdtemp, rm } from "node:fs/promises";
import type { RequestListener } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Bus } from "@loom/bus/bus";
import { openBus } from "@loom/bus/open";
import { loadConfig } from "@loom/runtime/config";
import { listen, type RunningServer, startRpcServer } from "@loom/server/rpc-server";
import type { RpcService } from "@loom/server/rpc-service";
import type { ServiceProcess } from "@loom/server/run-service";
import { createHttpServer } from "@loom/server/turn-batched-response";
import {
  blobService,
  callersLast,
  callsOf,
  entryOf,
  gateway,
  type ServiceName,
  serviceNames,
} from "@loom/services/registry";
import { createLogger, type Logger } from "@loom/telemetry/logger";
import { freePort, repoRoot } from "@loom/testing/processes";
import { dropDatabase, freshDatabaseName, testServers } from "@loom/testing/servers";
import { testTokenSecret } from "@loom/testing/tokens";
import type { z } from "zod";

/** Settings as their variables would hold them; numbers and flags are written out. */
export type Settings = Record<string, string | number | boolean | undefined>;

export interface StackOptions extends Partial<Record<ServiceName | typeof gateway.name, Settings>> {
  /** The in-process bus even when NATS_URL is set. */
  memoryBus?: boolean;
  /** What a service's wiring gets besides its settings (the runs service: `model`, a model of the test's). */
  inject?: Partial<Record<ServiceName, object>>;
  /** Where every service and gateway of the stack logs (a test reading the lines); unset: silent unless TEST_LOG_LEVEL. */
  logger?: Logger;
}

export interface TestStack {
  gatewayUrl: string;
  /** Each service's own URL (its /readyz, its RPCs). */
  urls: Record<ServiceName, string>;
  /** The service a process.ts wired, as its process holds it (the runs service's has its worker: `WiredRunsService`). */
  wired(name: ServiceName): RpcService;
  /** The bus the services share (the in-process one when `memoryBus`). */
  bus: Bus;
  /**
   * Starts another gateway replica on the same services and bus; `urls`:
   * reach some services there instead (a proxy in between); `natsUrl`: its
   * bus on that NATS server instead (one the test can stop).
   */
  addGateway(options?: { urls?: Partial<Record<ServiceName, string>>; natsUrl?: string }): Promise<string>;
  bootstrapKey: string;
  /** Stops a service and starts it again on the same port and store. */
  restartService(name: ServiceName): Promise<void>;
  /** Stops a service for good (a backing service that is down). */
  stopService(name: ServiceName): Promise<void>;
  /** Where the service that serves blobs keeps their bytes (local disk). */
  blobDir: string;
  close(): Promise<void>;
}

const serviceToken = "test-service-token-0123456789";
const bootstrapKey = "loom_test-bootstrap-key-0123456789abcdefghijklmnop";
/** The tools service's SECRETS_KEY in tests: 32 bytes in base64. */
const testSecretsKey = Buffer.alloc(32, 7).toString("base64");

/** What tests run a service with, over its defaults: a known admin key, short leases and polls, echo unless a test says otherwise. */
const testSettings: Partial<Record<ServiceName, Settings>> = {
  identity: {
    BOOTSTRAP_EMAIL: "admin@example.com",
    BOOTSTRAP_API_KEY: bootstrapKey,
    ACCESS_TOKEN_SECRET: testTokenSecret,
  },
  runs: {
    RUN_TIMEOUT_MS: 30_000,
    RUN_LEASE_MS: 2_000,
    RUN_POLL_MS: 50,
    RUN_WORKER_CONCURRENCY: 16,
    RUN_MAX_PER_ORGANIZATION: 8,
    RUN_MAX_QUEUED_PER_ORGANIZATION: 1000,
    CHAT_TIMEOUT_MS: 30_000,
  },
  tools: { SECRETS_KEY: testSecretsKey },
};

/** The gateway's code, loaded by path as the services' (the shared packages import no app). */
interface GatewayModules {
  schema: z.ZodObject;
  buildGateway(config: unknown, deps: { logger: Logger; bus?: Bus }): { app: { callback(): RequestListener } };
}

const appModule = async <T>(app: string, file: string): Promise<T> =>
  (await import(pathToFileURL(join(repoRoot, "apps", app, "src", file)).href)) as T;
const loadService = async (name: ServiceName) =>
  (await appModule<{ serviceProcess: ServiceProcess }>(name, "process.ts")).serviceProcess;
const loadGateway = async (): Promise<GatewayModules> => {
  const [{ gatewayConfigSchema }, { buildGateway }] = await Promise.all([
    appModule<{ gatewayConfigSchema: z.ZodObject }>(gateway.name, "config.ts"),
    appModule<Pick<GatewayModules, "buildGateway">>(gateway.name, "process.ts"),
  ]);
  return { schema: gatewayConfigSchema, buildGateway };
};

const asEnv = (settings: Settings): Record<string, string> =>
  Object.fromEntries(
    Object.entries(settings).flatMap(([name, value]) => (value === undefined ? [] : [[name, String(value)]])),
  );

/**
 * Every service of the registry and the gateway in this process, each on its
 * own port over HTTP as in the split deployment: each service from the
 * settings its `process.ts` reads (the split deployment's code path, minus
 * the process), on a SQLite store in memory or on MongoDB, sharing one bus.
 * Options give a service (or the gateway) settings over the tests' own.
 */
export async function startStack(store: "sqlite" | "mongo", options: StackOptions = {}): Promise<TestStack> {
  const logger = options.logger ?? createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");
  const db = freshDatabaseName();
  const mongoUrl = store === "mongo" ? testServers.mongoUrl : undefined;
  if (store === "mongo" && !mongoUrl) throw new Error("startStack('mongo') needs MONGODB_URL");
  const natsUrl = options.memoryBus ? undefined : testServers.natsUrl;
  const bus: Bus = await openBus(natsUrl, "test-stack");
  // Blob bytes in a directory of this stack's own; signed URLs point at the (first) gateway, which forwards them.
  const blobDir = await mkdtemp(join(tmpdir(), "loom-test-blobs-"));
  const gatewayPort = await freePort();
  const blobSettings: Settings = {
    BLOB_DIR: blobDir,
    BLOB_SIGNING_KEY: "test-blob-signing-key-0123456789abcdef",
    PUBLIC_URL: `http://127.0.0.1:${gatewayPort}`,
  };

  const urls = {} as Record<ServiceName, string>;
  const servers = new Map<ServiceName, RunningServer>();
  const wired = new Map<ServiceName, RpcService>();
  const urlSettings = (names: readonly ServiceName[], over: Partial<Record<ServiceName, string>> = {}) =>
    Object.fromEntries(names.map((name) => [entryOf(name).urlVariable, over[name] ?? urls[name]]));
  const startService = async (name: ServiceName, port = 0) => {
    const { schema, wire } = await loadService(name);
    const settings = { ...testSettings[name], ...(name === blobService() ? blobSettings : {}), ...options[name] };
    const env = {
      ...asEnv(settings),
      ...urlSettings(callsOf(name)),
      SERVICE_TOKEN: serviceToken,
      ...(mongoUrl ? { MONGODB_URL: mongoUrl, MONGODB_DB: `${db}_${name}` } : {}),
    };
    const service = await wire(loadConfig(schema, env), { logger, bus, ...options.inject?.[name] });
    const server = await startRpcServer({ services: [service], bus, serviceToken, logger, port });
    // As its process would: once it listens (identity's bootstrap).
    await service.started?.();
    servers.set(name, server);
    wired.set(name, service);
    urls[name] = server.url;
  };
  const stopService = async (name: ServiceName) => {
    await servers.get(name)?.close();
    servers.delete(name);
  };
  // Each after the services it calls: their URLs are its settings.
  for (const name of callersLast()) await startService(name);

  const { schema: gatewaySchema, buildGateway } = await loadGateway();
  const gateways: RunningServer[] = [];
  const startGateway = async (
    port: number,
    over: { urls?: Partial<Record<ServiceName, string>>; natsUrl?: string } = {},
  ) => {
    // Each replica its own bus connection, as separate processes would have.
    const replicaNats = over.natsUrl ?? natsUrl;
    const replicaBus = replicaNats ? await openBus(replicaNats, "test-gateway") : bus;
    const config = loadConfig(gatewaySchema, {
      ...asEnv(options.gateway ?? {}),
      ...urlSettings(serviceNames, over.urls),
      SERVICE_TOKEN: serviceToken,
    });
    const { app } = buildGateway(config, { logger, bus: replicaBus });
    const server = await listen(createHttpServer(app.callback()), port, "127.0.0.1", async () => {
      if (replicaBus !== bus) await replicaBus.close();
    });
    gateways.push(server);
    return server.url;
  };
  const gatewayUrl = await startGateway(gatewayPort);

  return {
    gatewayUrl,
    urls,
    wired: (name) => wired.get(name)!,
    bus,
    addGateway: (over) => startGateway(0, over),
    bootstrapKey,
    blobDir,
    stopService,
    async restartService(name) {
      const port = servers.get(name)!.port;
      await stopService(name);
      await startService(name, port);
    },
    async close() {
      await Promise.all(gateways.map((g) => g.close()));
      // Callers first: the runs worker still calls events while it stops.
      for (const name of callersLast().reverse()) await stopService(name);
      await bus.close();
      await rm(blobDir, { recursive: true, force: true });
      if (mongoUrl) for (const name of serviceNames) await dropDatabase(mongoUrl, `${db}_${name}`);
    },
  };
}
