import { createClient, createRouterTransport } from "@connectrpc/connect";
import { IdentityService } from "@loom/proto/identity/v1/identity_pb";
import { openSqlite } from "@loom/store/sqlite";
import { createLogger } from "@loom/telemetry/logger";
import { signAccessToken, testTokenSecret } from "@loom/testing/tokens";
import { describe, expect, it } from "vitest";
import { createAccessTokenVerifier } from "../src/access-tokens.ts";
import { bootstrapIdentity } from "../src/bootstrap.ts";
import { createIdentityService } from "../src/service.ts";
import type { IdentityStore } from "../src/store/port.ts";
import { createSqliteIdentityStore } from "../src/store/sqlite.ts";

const logger = createLogger("test", "silent");

async function freshStore() {
  const store = createSqliteIdentityStore(openSqlite(":memory:"));
  await store.init();
  return store;
}

function identityClient(store: IdentityStore) {
  const service = createIdentityService({ store, logger });
  return createClient(
    IdentityService,
    createRouterTransport((router) => service.routes(router)),
  );
}

describe("bootstrap", () => {
  it("generates a key on an empty store, once, and the key authenticates", async () => {
    const store = await freshStore();
    const value = await bootstrapIdentity(store, { email: "admin@localhost" }, logger);
    expect(value).toMatch(/^loom_[A-Za-z0-9_-]{43}$/);
    expect(await bootstrapIdentity(store, { email: "admin@localhost" }, logger)).toBeUndefined();
    expect(await store.countUsers()).toBe(1);
    const { principal } = await identityClient(store).authenticate({ credential: value! });
    expect(principal?.organizationId).toBeTruthy();
  });

  it("seeds the exact BOOTSTRAP_API_KEY value and returns no key to print (apps/loom/test/start.test.ts reads the log)", async () => {
    const store = await freshStore();
    const seeded = "loom_seeded-from-a-deployment-secret-0123456789";
    expect(await bootstrapIdentity(store, { email: "ops@example.com", apiKey: seeded }, logger)).toBeUndefined();
    const { principal } = await identityClient(store).authenticate({ credential: seeded });
    const users = await store.listUsersOf(principal!.organizationId);
    expect(users.map((u) => u.email)).toEqual(["ops@example.com"]);
  });

  it("never bootstraps a store that has users", async () => {
    const store = await freshStore();
    await store.insertUser({
      id: "u",
      subject: "local:u",
      email: "x@y",
      organizations: [],
      createdAt: new Date(),
      updatedAt: new Date(),
    });
    expect(await bootstrapIdentity(store, { email: "admin@localhost" }, logger)).toBeUndefined();
    expect(await store.countUsers()).toBe(1);
  });
});

describe("the service trusts only what it should", () => {
  it("refuses principal-scoped RPCs without a principal", async () => {
    await expect(identityClient(await freshStore()).listUsers({})).rejects.toMatchObject({ code: 16 });
  });

  it("does not let a token whose subject looks local take over a local user", async () => {
    const store = await freshStore();
    const seeded = "loom_seeded-from-a-deployment-secret-0123456789";
    await bootstrapIdentity(store, { email: "ops@example.com", apiKey: seeded }, logger);
    const service = createIdentityService({
      store,
      logger,
      accessTokens: createAccessTokenVerifier({ secret: testTokenSecret }),
    });
    const client = createClient(
      IdentityService,
      createRouterTransport((router) => service.routes(router)),
    );
    const admin = (await client.authenticate({ credential: seeded })).principal!;
    const token = await signAccessToken({ sub: `local:${admin.userId}` });
    const impostor = (await client.authenticate({ credential: token })).principal!;
    expect(impostor.userId).not.toBe(admin.userId);
    expect(impostor.organizationId).not.toBe(admin.organizationId);
  });
});
