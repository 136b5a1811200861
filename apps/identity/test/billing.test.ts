import type { AddressInfo } from "node:net";
import { createServer } from "node:net";
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { fieldViolationsOf } from "@loom/contracts/errors";
import { newId } from "@loom/contracts/ids";
import { BillingService } from "@loom/proto/identity/v1/billing_pb";
import { headersFor } from "@loom/server/principal";
import { inProcessTransport } from "@loom/server/transports";
import { createLogger } from "@loom/telemetry/logger";
import { type FakeStripe, startFakeStripe } from "@loom/testing/fake-stripe";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stripeWebhooks } from "../src/billing/stripe-client.ts";
import type { IdentityStore } from "../src/store/port.ts";
import { type IdentitySettings, openIdentityStore, wireIdentity } from "../src/wiring.ts";

const logger = createLogger("test", "silent");
const serviceToken = "test-service-token-0123456789";
const webhookSecret = "whsec_test_0123456789";
const billingUrls = {
  BILLING_RETURN_URL: "https://app.example/billing",
  BILLING_SUCCESS_URL: "https://app.example/billing/thanks",
};

async function rpcError(call: Promise<unknown>): Promise<ConnectError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConnectError);
  return error as ConnectError;
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A signed webhook delivery of one Stripe event. */
function signedEvent(
  event: { id: string; type: string; created: number; object: Record<string, unknown> },
  secret = webhookSecret,
) {
  const payload = JSON.stringify({
    id: event.id,
    object: "event",
    type: event.type,
    created: event.created,
    livemode: false,
    api_version: "2025-01-01",
    data: { object: event.object },
  });
  return {
    payload: new TextEncoder().encode(payload),
    signature: stripeWebhooks.generateTestHeaderString({ payload, secret }),
  };
}

const subscription = (customer: string, status: string, over: Record<string, unknown> = {}) => ({
  object: "subscription",
  id: "sub_1",
  customer,
  status,
  metadata: {},
  items: {
    object: "list",
    data: [{ object: "subscription_item", price: { object: "price", id: "price_pro", lookup_key: "pro" } }],
  },
  ...over,
});

describe.each(storeKinds("billing"))("billing (%s store)", (kind) => {
  const db = freshDatabaseName();
  let store: IdentityStore;
  let fake: FakeStripe;
  const stores: IdentityStore[] = [];

  async function billingClient(settings: Partial<IdentitySettings>): Promise<Client<typeof BillingService>> {
    const { service } = await wireIdentity(store, { BOOTSTRAP_EMAIL: "admin@example.com", ...settings }, logger);
    return createClient(BillingService, inProcessTransport([service], serviceToken, logger));
  }
  const as = (organizationId: string) => ({ headers: headersFor({ userId: newId(), organizationId }) });

  beforeAll(async () => {
    store = await openIdentityStore({ url: kind === "mongo" ? testServers.mongoUrl : undefined, db });
    stores.push(store);
    fake = await startFakeStripe({
      prices: { pro: { id: "price_pro", recurring: true }, credits: { id: "price_credits", recurring: false } },
      createDelayMs: 50,
    });
  });
  afterAll(async () => {
    await fake.close();
    await store.close();
    if (kind === "mongo") await dropDatabase(testServers.mongoUrl!, db);
  });

  const withStripe = () =>
    billingClient({ STRIPE_SECRET_KEY: "sk_test_fake", STRIPE_API_BASE: fake.url, ...billingUrls });

  it("opens a Checkout session for the price with the lookup key, for the organization's customer", async () => {
    const billing = await withStripe();
    const organization = newId();
    const res = await billing.createCheckoutSession({ priceLookupKey: "pro" }, as(organization));
    expect(res.redirectUrl).toMatch(/^https:\/\/checkout\.stripe\.test\/c\/pay\/cs_fake\d+$/);
    const customer = (await store.getBilling(organization))?.stripeCustomerId;
    expect(customer).toMatch(/^cus_fake\d+$/);
    const session = fake.requests.filter((r) => r.path === "/v1/checkout/sessions").at(-1)!;
    expect(session.params).toMatchObject({
      customer,
      mode: "subscription",
      "line_items[0][price]": "price_pro",
      "line_items[0][quantity]": "1",
      success_url: billingUrls.BILLING_SUCCESS_URL,
      cancel_url: billingUrls.BILLING_RETURN_URL, // the default
      client_reference_id: organization,
      "subscription_data[metadata][organization_id]": organization,
    });
    // A one-time price is a payment.
    await billing.createCheckoutSession({ priceLookupKey: "credits" }, as(organization));
    expect(fake.requests.filter((r) => r.path === "/v1/checkout/sessions").at(-1)!.params).toMatchObject({
      mode: "payment",
      customer,
    });
  });

  it("refuses an unknown or empty lookup key with its path, and creates no customer", async () => {
    const billing = await withStripe();
    const organization = newId();
    for (const key of ["no-such-plan", "  "]) {
      const error = await rpcError(billing.createCheckoutSession({ priceLookupKey: key }, as(organization)));
      expect(error.code).toBe(Code.InvalidArgument);
      expect(fieldViolationsOf(error).map((v) => v.path)).toEqual(["body.price_lookup_key"]);
    }
    expect(await store.getBilling(organization)).toBeUndefined();
  });

  it("creates one Stripe customer per organization, even for concurrent first calls, and reuses it", async () => {
    const billing = await withStripe();
    const organization = newId();
    const before = fake.customersCreated();
    await Promise.all([
      ...Array.from({ length: 4 }, () => billing.createCheckoutSession({ priceLookupKey: "pro" }, as(organization))),
      billing.createBillingManagementUrl({}, as(organization)),
    ]);
    expect(fake.customersCreated()).toBe(before + 1);
    const customer = (await store.getBilling(organization))?.stripeCustomerId;
    const creations = fake.requests.filter((r) => r.path === "/v1/customers");
    expect(
      new Set(
        creations.filter((r) => r.params["metadata[organization_id]"] === organization).map((r) => r.idempotencyKey),
      ).size,
    ).toBe(1);
    const calls = creations.length;
    await billing.createBillingManagementUrl({}, as(organization));
    expect(fake.requests.filter((r) => r.path === "/v1/customers")).toHaveLength(calls); // known now: not asked again
    const sessions = fake.requests.filter((r) => r.path !== "/v1/customers" && r.path !== "/v1/prices").slice(-6);
    expect(sessions.every((r) => r.params.customer === customer)).toBe(true);
    // Another organization has a customer of its own.
    await billing.createBillingManagementUrl({}, as(newId()));
    expect(fake.customersCreated()).toBe(before + 2);
  });

  it("opens a customer-portal session that returns to the configured URL", async () => {
    const billing = await withStripe();
    const res = await billing.createBillingManagementUrl({}, as(newId()));
    expect(res.billingManagementUrl).toMatch(/^https:\/\/billing\.stripe\.test\/p\/session\//);
    expect(fake.requests.at(-1)!.params.return_url).toBe(billingUrls.BILLING_RETURN_URL);
  });

  it("answers UNAVAILABLE, saying so, without STRIPE_SECRET_KEY", async () => {
    const billing = await billingClient({});
    for (const call of [
      billing.createCheckoutSession({ priceLookupKey: "pro" }, as(newId())),
      billing.createBillingManagementUrl({}, as(newId())),
    ]) {
      const error = await rpcError(call);
      expect(error.code).toBe(Code.Unavailable);
      expect(error.rawMessage).toMatch(/billing is not configured/);
    }
  });

  it("answers UNAVAILABLE when Stripe cannot be reached", async () => {
    const billing = await billingClient({
      STRIPE_SECRET_KEY: "sk_test_fake",
      STRIPE_API_BASE: `http://127.0.0.1:${await closedPort()}`,
      ...billingUrls,
    });
    const error = await rpcError(billing.createBillingManagementUrl({}, as(newId())));
    expect(error.code).toBe(Code.Unavailable);
  }, 20_000);

  describe("webhooks", () => {
    let billing: Client<typeof BillingService>;
    beforeAll(async () => {
      billing = await billingClient({ STRIPE_WEBHOOK_SECRET: webhookSecret });
    });

    it("records the organization's subscription status and plan, once per event id", async () => {
      const organization = newId();
      const customer = `cus_${newId()}`;
      await store.setStripeCustomer(organization, customer);
      const created = signedEvent({
        id: `evt_${newId()}`,
        type: "customer.subscription.created",
        created: 1_700_000_010,
        object: subscription(customer, "active"),
      });
      expect((await billing.handleStripeWebhook(created)).applied).toBe(true);
      const recorded = {
        status: "active",
        plan: "pro",
        subscriptionId: "sub_1",
        eventCreatedAt: new Date(1_700_000_010_000),
      };
      expect((await store.getBilling(organization))?.subscription).toEqual(recorded);

      // The same event id again, even with other contents and a later time: nothing changes.
      expect((await billing.handleStripeWebhook(created)).applied).toBe(false);
      const replay = signedEvent({
        id: JSON.parse(new TextDecoder().decode(created.payload)).id,
        type: "customer.subscription.updated",
        created: 1_700_000_030,
        object: subscription(customer, "past_due"),
      });
      expect((await billing.handleStripeWebhook(replay)).applied).toBe(false);
      expect((await store.getBilling(organization))?.subscription).toEqual(recorded);

      const deleted = signedEvent({
        id: `evt_${newId()}`,
        type: "customer.subscription.deleted",
        created: 1_700_000_040,
        object: subscription(customer, "canceled"),
      });
      expect((await billing.handleStripeWebhook(deleted)).applied).toBe(true);
      expect((await store.getBilling(organization))?.subscription?.status).toBe("canceled");
    });

    it("finds the organization by the subscription's metadata when the customer is unknown", async () => {
      const organization = newId();
      const event = signedEvent({
        id: `evt_${newId()}`,
        type: "customer.subscription.updated",
        created: 1_700_000_050,
        object: subscription("cus_elsewhere", "trialing", { metadata: { organization_id: organization } }),
      });
      expect((await billing.handleStripeWebhook(event)).applied).toBe(true);
      expect((await store.getBilling(organization))?.subscription).toMatchObject({ status: "trialing", plan: "pro" });
    });

    it("accepts and ignores event types it does not use", async () => {
      const event = signedEvent({
        id: `evt_${newId()}`,
        type: "invoice.paid",
        created: 1_700_000_060,
        object: { object: "invoice", id: "in_1", customer: "cus_x" },
      });
      expect((await billing.handleStripeWebhook(event)).applied).toBe(false);
    });

    it("refuses a missing or bad signature, and changes nothing", async () => {
      const organization = newId();
      const customer = `cus_${newId()}`;
      await store.setStripeCustomer(organization, customer);
      const good = signedEvent({
        id: `evt_${newId()}`,
        type: "customer.subscription.created",
        created: 1_700_000_070,
        object: subscription(customer, "active"),
      });
      const forged = signedEvent(
        {
          id: `evt_${newId()}`,
          type: "customer.subscription.created",
          created: 1_700_000_070,
          object: subscription(customer, "active"),
        },
        "whsec_someone_else",
      );
      const tampered = {
        payload: new TextEncoder().encode(new TextDecoder().decode(good.payload).replace('"active"', '"trialing"')),
        signature: good.signature,
      };
      for (const delivery of [{ payload: good.payload, signature: "" }, forged, tampered]) {
        const error = await rpcError(billing.handleStripeWebhook(delivery));
        expect(error.code).toBe(Code.InvalidArgument);
        expect(fieldViolationsOf(error).map((v) => v.path)).toEqual(["headers.stripe-signature"]);
      }
      expect((await store.getBilling(organization))?.subscription).toBeUndefined();
    });

    it("answers UNAVAILABLE without STRIPE_WEBHOOK_SECRET", async () => {
      const unconfigured = await billingClient({});
      const error = await rpcError(
        unconfigured.handleStripeWebhook(signedEvent({ id: "evt_1", type: "invoice.paid", created: 1, object: {} })),
      );
      expect(error.code).toBe(Code.Unavailable);
    });
  });
});
