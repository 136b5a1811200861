import { createServer } from "node:http";
import { createLogger } from "@loom/kit/logger";
import { listen, startRpcServer, type RunningServer } from "@loom/kit/rpc-server";
import { httpTransport } from "@loom/kit/transports";
import { openIdentityStore, wireIdentity } from "@loom/identity/wiring";
import { dropDatabase, freshDatabaseName, testServers } from "@loom/testing/servers";
import { testTokenSecret } from "@loom/testing/tokens";
import { buildApp } from "../src/app.ts";
import { serviceClients } from "../src/clients.ts";
import { servicesReady } from "../src/readiness.ts";

export interface TestStack {
  gatewayUrl: string;
  identityUrl: string;
  bootstrapKey: string;
  /** Stops the identity service and starts it again on the same port and store. */
  restartIdentity(): Promise<void>;
  close(): Promise<void>;
}

const serviceToken = "test-service-token-0123456789";
const bootstrapKey = "loom_test-bootstrap-key-0123456789abcdefghijklmnop";

/**
 * The real thing on ports 0: the identity service over HTTP (memory or
 * MongoDB store) and the gateway calling it through Connect.
 */
export async function startStack(store: "memory" | "mongo"): Promise<TestStack> {
  const logger = createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");
  const db = freshDatabaseName();
  const mongo = { url: store === "mongo" ? testServers.mongoUrl : undefined, db };
  if (store === "mongo" && !mongo.url) throw new Error("startStack('mongo') needs MONGODB_URL");

  const startIdentity = async (port = 0) => {
    const identityStore = await openIdentityStore(mongo);
    const { service } = await wireIdentity(
      identityStore,
      { BOOTSTRAP_EMAIL: "admin@example.com", BOOTSTRAP_API_KEY: bootstrapKey, ACCESS_TOKEN_SECRET: testTokenSecret },
      logger,
    );
    return startRpcServer({ services: [service], serviceToken, logger, port });
  };

  let identity: RunningServer = await startIdentity();
  const clients = serviceClients({ identity: httpTransport(identity.url, serviceToken) });
  const { app } = buildApp({ clients, logger, ready: () => servicesReady([identity.url]) });
  const gateway = await listen(createServer(app.callback()), 0, "127.0.0.1");

  return {
    gatewayUrl: gateway.url,
    identityUrl: identity.url,
    bootstrapKey,
    async restartIdentity() {
      await identity.close();
      identity = await startIdentity(identity.port);
    },
    async close() {
      await gateway.close();
      await identity.close();
      if (mongo.url) await dropDatabase(mongo.url, db);
    },
  };
}
