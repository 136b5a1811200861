import { newId } from "@loom/contracts/ids";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiKeyRecord, IdentityStore } from "../src/store/port.ts";
import { openIdentityStore } from "../src/wiring.ts";

/** One contract, both adapters: what the service relies on from any identity store. */
describe.each(storeKinds("identity store contract"))("identity store contract (%s)", (kind) => {
  let store: IdentityStore;
  const db = freshDatabaseName();
  const org = newId();

  beforeAll(async () => {
    store = await openIdentityStore({ url: kind === "mongo" ? testServers.mongoUrl : undefined, db });
    await store.init();
    await store.init(); // idempotent
  });
  afterAll(async () => {
    await store.close();
    if (kind === "mongo") await dropDatabase(testServers.mongoUrl!, db);
  });

  const key = (over: Partial<ApiKeyRecord> = {}): ApiKeyRecord => {
    const at = new Date();
    return {
      id: newId(),
      organizationId: org,
      name: "k",
      secretHash: newId(),
      createdBy: "u",
      createdAt: at,
      updatedAt: at,
      lastUsed: at,
      ...over,
    };
  };

  it("round-trips a user and refuses a second user with the same subject", async () => {
    const at = new Date("2026-01-02T03:04:05.678Z");
    const user = { id: newId(), subject: "jwt:a", email: "a@x", organizations: [org], createdAt: at, updatedAt: at };
    expect(await store.insertUser(user)).toBe(true);
    expect(await store.insertUser({ ...user, id: newId() })).toBe(false);
    expect(await store.getUser(user.id)).toEqual(user);
    expect(await store.findUserBySubject("jwt:a")).toEqual(user);
    expect(await store.findUserBySubject("jwt:nobody")).toBeUndefined();
    expect((await store.listUsersOf(org)).map((u) => u.id)).toEqual([user.id]);
    expect(await store.listUsersOf(newId())).toEqual([]);
  });

  it("finds an organization by id, and the oldest one first", async () => {
    expect(await store.firstOrganization()).toBeUndefined();
    const later = { id: newId(), name: "Later", createdAt: new Date("2026-02-01T00:00:00.000Z") };
    const first = { id: newId(), name: "First", createdAt: new Date("2026-01-01T00:00:00.000Z") };
    await store.insertOrganization(later);
    await store.insertOrganization(first);
    expect(await store.getOrganization(later.id)).toEqual(later);
    expect(await store.getOrganization(newId())).toBeUndefined();
    expect(await store.firstOrganization()).toEqual(first);
  });

  it("grants the bootstrap claim exactly once", async () => {
    const claims = await Promise.all([
      store.claimBootstrap(new Date()),
      store.claimBootstrap(new Date()),
      store.claimBootstrap(new Date()),
    ]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await store.claimBootstrap(new Date())).toBe(false);
  });

  it("finds keys by id and by secret hash, renames and deletes them", async () => {
    const k = key({ name: "first" });
    await store.insertApiKey(k);
    expect(await store.getApiKey(k.id)).toEqual(k);
    expect(await store.findApiKeyBySecretHash(k.secretHash)).toEqual(k);
    const at = new Date(k.createdAt.getTime() + 1000);
    expect(await store.renameApiKey(k.id, "second", at)).toEqual({ ...k, name: "second", updatedAt: at });
    expect(await store.renameApiKey(newId(), "x", at)).toBeUndefined();
    expect(await store.deleteApiKey(k.id)).toBe(true);
    expect(await store.deleteApiKey(k.id)).toBe(false);
    expect(await store.getApiKey(k.id)).toBeUndefined();
    expect(await store.findApiKeyBySecretHash(k.secretHash)).toBeUndefined();
  });

  it("touches last_used only if it is still what the caller saw", async () => {
    const k = key();
    await store.insertApiKey(k);
    const first = new Date(k.lastUsed.getTime() + 10);
    await store.touchApiKey(k.id, first, k.lastUsed);
    await store.touchApiKey(k.id, new Date(first.getTime() + 10), k.lastUsed); // lost the race: no write
    expect((await store.getApiKey(k.id))?.lastUsed).toEqual(first);
  });

  it("lists a user's keys or an organization's own keys, newest first, ties by id, with a total", async () => {
    const owner = newId();
    const same = new Date("2026-05-05T05:05:05.000Z");
    const userKeys = [
      key({ userId: owner, createdAt: new Date("2026-05-05T05:05:04.000Z") }),
      key({ userId: owner, createdAt: same }),
      key({ userId: owner, createdAt: same }),
    ];
    const orgKey = key({ organizationId: owner });
    for (const k of [...userKeys, orgKey]) await store.insertApiKey(k);
    const expected = [userKeys[1]!, userKeys[2]!].sort((a, b) => (a.id < b.id ? 1 : -1)).concat(userKeys[0]!);
    const page1 = await store.listApiKeys({ organizationId: org, userId: owner }, 0, 2);
    const page2 = await store.listApiKeys({ organizationId: org, userId: owner }, 2, 2);
    expect(page1.totalCount).toBe(3);
    expect([...page1.items, ...page2.items].map((k) => k.id)).toEqual(expected.map((k) => k.id));
    const orgKeys = await store.listApiKeys({ organizationId: owner, organizationKeysOnly: true }, 0, 10);
    expect(orgKeys.items.map((k) => k.id)).toEqual([orgKey.id]);
  });

  it("counts an organization's keys of every kind, and a user's own", async () => {
    const organizationId = newId();
    const [alice, bob] = [newId(), newId()];
    for (const k of [
      key({ organizationId, userId: alice }),
      key({ organizationId, userId: alice }),
      key({ organizationId, userId: bob }),
      key({ organizationId }),
    ]) {
      await store.insertApiKey(k);
    }
    expect(await store.countApiKeys(organizationId)).toBe(4);
    expect(await store.countApiKeys(organizationId, alice)).toBe(2);
    expect(await store.countApiKeys(organizationId, newId())).toBe(0);
  });

  it("keeps the first Stripe customer of an organization and finds the organization by it", async () => {
    const organization = newId();
    expect(await store.getBilling(organization)).toBeUndefined();
    const kept = await Promise.all([
      store.setStripeCustomer(organization, "cus_a"),
      store.setStripeCustomer(organization, "cus_b"),
    ]);
    expect(new Set(kept).size).toBe(1);
    expect(await store.setStripeCustomer(organization, "cus_c")).toBe(kept[0]);
    expect((await store.getBilling(organization))?.stripeCustomerId).toBe(kept[0]);
    expect(await store.findOrganizationByStripeCustomer(kept[0]!)).toBe(organization);
    expect(await store.findOrganizationByStripeCustomer("cus_nobody")).toBeUndefined();
  });

  it("records a subscription unless a newer event recorded one", async () => {
    const organization = newId();
    await store.setStripeCustomer(organization, `cus_${organization}`);
    const sub = {
      status: "active",
      plan: "pro",
      subscriptionId: "sub_1",
      eventCreatedAt: new Date("2026-03-03T00:00:10.000Z"),
    };
    expect(await store.recordSubscription(organization, sub)).toBe(true);
    const older = { ...sub, status: "incomplete", eventCreatedAt: new Date("2026-03-03T00:00:05.000Z") };
    expect(await store.recordSubscription(organization, older)).toBe(false);
    expect(await store.getBilling(organization)).toEqual({
      organizationId: organization,
      stripeCustomerId: `cus_${organization}`,
      subscription: sub,
    });
    const newer = { ...sub, status: "canceled", eventCreatedAt: new Date("2026-03-03T00:00:20.000Z") };
    expect(await store.recordSubscription(organization, newer)).toBe(true);
    expect((await store.getBilling(organization))?.subscription).toEqual(newer);
    // An organization with no customer recorded yet still gets its subscription.
    const other = newId();
    expect(await store.recordSubscription(other, sub)).toBe(true);
    expect(await store.getBilling(other)).toEqual({ organizationId: other, subscription: sub });
  });

  it("remembers which Stripe events were handled", async () => {
    const id = `evt_${newId()}`;
    expect(await store.stripeEventSeen(id)).toBe(false);
    await store.markStripeEventSeen(id, new Date());
    await store.markStripeEventSeen(id, new Date());
    expect(await store.stripeEventSeen(id)).toBe(true);
  });
});
