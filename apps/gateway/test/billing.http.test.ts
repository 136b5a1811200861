import { newId } from "@loom/contracts/ids";
import { stripeWebhooks } from "@loom/identity/billing/stripe-client";
import { metricsRegistry } from "@loom/telemetry/metrics";
import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { type FakeStripe, startFakeStripe } from "@loom/testing/fake-stripe";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { needs, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { billingManagementUrlSchema, checkoutSessionSchema } from "../src/schemas.ts";
import { expectError } from "./expect-error.ts";

const webhookSecret = "whsec_test_gateway_0123456789";
const billingUrls = { BILLING_RETURN_URL: "https://app.example/billing" };

/** A webhook delivery as Stripe makes it: no bearer credential, the signature header, the exact bytes. */
async function deliver(gatewayUrl: string, payload: string, signature?: string, path = "/billing/stripe-webhook") {
  const res = await fetch(new URL(path, gatewayUrl), {
    method: "POST",
    headers: {
      "content-type": "application/json; charset=utf-8",
      ...(signature === undefined ? {} : { "stripe-signature": signature }),
    },
    body: payload,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/** Pretty-printed with non-ASCII text: the signature matches only if the gateway forwards the bytes untouched. */
function eventPayload(type: string, object: Record<string, unknown>, id = `evt_${newId()}`) {
  return JSON.stringify(
    { id, object: "event", type, created: 1_700_000_000, livemode: false, data: { object } },
    null,
    2,
  );
}
const sign = (payload: string, secret = webhookSecret) => stripeWebhooks.generateTestHeaderString({ payload, secret });

/** CheckBillingStanding calls identity has served in this process so far (its RPC metrics count every call). */
async function standingChecks(): Promise<number> {
  const { values } = await metricsRegistry.getSingleMetric("loom_rpc_server_duration_seconds")!.get();
  return values
    .filter(
      (v) =>
        "metricName" in v &&
        v.metricName === "loom_rpc_server_duration_seconds_count" &&
        v.labels.method === "loom.identity.v1.BillingService/CheckBillingStanding",
    )
    .reduce((sum, v) => sum + v.value, 0);
}

describe.each(storeKinds("billing over HTTP"))("billing over HTTP (%s)", (kind) => {
  let fake: FakeStripe;
  let stack: TestStack;
  let admin: ApiClient;

  beforeAll(async () => {
    fake = await startFakeStripe({ prices: { pro: { id: "price_pro", recurring: true } } });
    stack = await startStack(kind, {
      memoryBus: true,
      identity: {
        STRIPE_SECRET_KEY: "sk_test_fake",
        STRIPE_API_BASE: fake.url,
        STRIPE_WEBHOOK_SECRET: webhookSecret,
        ...billingUrls,
      },
    });
    admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
  });
  afterAll(async () => {
    await stack?.close();
    await fake?.close();
  });

  it("CreateCheckoutSession answers 201 with where to pay, also under /api", async () => {
    for (const path of ["/billing/checkout-session", "/api/billing/checkout-session"]) {
      const res = await admin.post(path, { price_lookup_key: "pro" });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(checkoutSessionSchema.parse(res.body).redirect_url).toMatch(/^https:\/\/checkout\.stripe\.test\//);
    }
  });

  it("CreateCheckoutSession refuses an unknown lookup key and a missing one, with paths", async () => {
    const unknown = await admin.post("/billing/checkout-session", { price_lookup_key: "gold-plated" });
    expect(expectError(unknown, 400, "ValidationError").errors).toEqual([
      { path: "body.price_lookup_key", message: expect.stringContaining("gold-plated") },
    ]);
    const missing = await admin.post("/billing/checkout-session", {});
    expect(expectError(missing, 400, "ValidationError").errors).toEqual([
      { path: "body.price_lookup_key", message: expect.any(String) },
    ]);
    expectError(await admin.post("/billing/checkout-session"), 400, "ValidationError");
  });

  it("CreateBillingManagementUrl answers 201 with the portal link; both need a credential", async () => {
    const res = await admin.post("/billing/management-url");
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(billingManagementUrlSchema.parse(res.body).billing_management_url).toMatch(
      /^https:\/\/billing\.stripe\.test\//,
    );
    expectError(await admin.as(undefined).post("/billing/management-url"), 401, "Unauthorized");
    expectError(
      await admin.as(undefined).post("/billing/checkout-session", { price_lookup_key: "pro" }),
      401,
      "Unauthorized",
    );
  });

  it("the webhook takes a signed event without a bearer credential, and a replay of it", async () => {
    const payload = eventPayload("customer.subscription.created", {
      object: "subscription",
      id: "sub_1",
      customer: "cus_x",
      status: "active",
      metadata: { organization_id: newId() },
      items: { data: [] },
      description: "Überweisung ✓",
    });
    const signature = sign(payload);
    for (const path of ["/billing/stripe-webhook", "/api/billing/stripe-webhook"]) {
      const res = await deliver(stack.gatewayUrl, payload, signature, path);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toEqual({ received: true });
    }
  });

  it("runs need no subscription unless BILLING_REQUIRED is on, and nobody asks identity for one", async () => {
    const assistantId = (await admin.post("/assistants", { name: "free" })).body.assistant_id as string;
    const before = await standingChecks();
    expect((await admin.post(`/assistants/${assistantId}/runs`, {})).status).toBe(201);
    expect(await standingChecks()).toBe(before);
  });

  it("the webhook accepts event types it does not use", async () => {
    const payload = eventPayload("invoice.paid", { object: "invoice", id: "in_1", customer: "cus_x" });
    expect((await deliver(stack.gatewayUrl, payload, sign(payload))).status).toBe(200);
  });

  it("the webhook refuses a bad or missing signature with 400", async () => {
    const payload = eventPayload("customer.subscription.updated", {
      object: "subscription",
      id: "sub_1",
      customer: "cus_x",
      status: "active",
    });
    const forged = await deliver(stack.gatewayUrl, payload, sign(payload, "whsec_not_ours"));
    expect(expectError(forged, 400, "ValidationError").errors).toEqual([
      { path: "headers.stripe-signature", message: expect.any(String) },
    ]);
    const tampered = await deliver(stack.gatewayUrl, payload.replace('"active"', '"canceled"'), sign(payload));
    expectError(tampered, 400, "ValidationError");
    const unsigned = await deliver(stack.gatewayUrl, payload);
    expect(expectError(unsigned, 400, "ValidationError").errors).toEqual([
      { path: "headers.stripe-signature", message: "is required" },
    ]);
  });
});

describe("BILLING_REQUIRED=true", () => {
  let fake: FakeStripe;
  let stack: TestStack;
  let admin: ApiClient;
  beforeAll(async () => {
    fake = await startFakeStripe({ prices: {} });
    stack = await startStack("sqlite", {
      memoryBus: true,
      identity: {
        STRIPE_SECRET_KEY: "sk_test_fake",
        STRIPE_API_BASE: fake.url,
        STRIPE_WEBHOOK_SECRET: webhookSecret,
        BILLING_REQUIRED: true,
        ...billingUrls,
      },
      // Read by both, as one ConfigMap gives it to both in Kubernetes.
      gateway: { BILLING_REQUIRED: true },
    });
    admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
  });
  afterAll(async () => {
    await stack?.close();
    await fake?.close();
  });

  it("refuses runs with 402 and the management URL until the organization's subscription is active, and again once it is canceled", async () => {
    const organization = (await admin.get("/users")).body.users[0].organizations[0] as string;
    const assistantId = (await admin.post("/assistants", { name: "paid" })).body.assistant_id as string;
    const createRun = () => admin.post(`/assistants/${assistantId}/runs`, {});
    const subscriptionEvent = (status: string, created: number) => {
      const payload = JSON.stringify({
        id: `evt_${newId()}`,
        object: "event",
        type: "customer.subscription.updated",
        created,
        data: {
          object: {
            object: "subscription",
            id: "sub_1",
            customer: "cus_elsewhere",
            status,
            metadata: { organization_id: organization },
            items: { data: [] },
          },
        },
      });
      return deliver(stack.gatewayUrl, payload, sign(payload));
    };

    const checksBefore = await standingChecks();
    const unpaid = await createRun();
    expect(await standingChecks()).toBe(checksBefore + 1); // billing on: identity is asked, once a create
    expect(expectError(unpaid, 402, "PaymentRequired").errors[0]!.message).toMatch(
      /no active subscription .*https:\/\/billing\.stripe\.test\/p\/session\//,
    );
    expect((await subscriptionEvent("active", 1_700_000_100)).status).toBe(200);
    expect((await createRun()).status).toBe(201);
    expect((await subscriptionEvent("canceled", 1_700_000_200)).status).toBe(200);
    expectError(await createRun(), 402, "PaymentRequired");
  });

  it("refuses chat messages, plain and streamed, with 402 while unpaid", async () => {
    const chat = {
      messages: [
        {
          role: "user",
          content: [
            {
              type: "TextMessageContent",
              artifact: { type: "TextArtifact", id: "a1", name: "a1", reference: null, meta: {}, value: "hi" },
            },
          ],
          usage: { type: "Message.Usage", input_tokens: null, output_tokens: null },
        },
      ],
      tools: [],
      output_schema: null,
      driver_configuration: {},
    };
    expectError(await admin.post("/chat/messages", chat), 402, "PaymentRequired");
    expectError(await admin.post("/chat/messages/stream", chat), 402, "PaymentRequired");
  });
});

describe("billing over HTTP, not configured", () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack("sqlite", { memoryBus: true });
  });
  afterAll(() => stack?.close());

  it("answers 503 Unavailable saying billing is not configured", async () => {
    const admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
    for (const res of [
      await admin.post("/billing/checkout-session", { price_lookup_key: "pro" }),
      await admin.post("/billing/management-url"),
    ]) {
      expect(expectError(res, 503, "Unavailable").errors[0]!.message).toMatch(/billing is not configured/);
      expect(res.headers.get("retry-after")).toBeTruthy();
    }
    const payload = eventPayload("invoice.paid", { object: "invoice" });
    expectError(await deliver(stack.gatewayUrl, payload, sign(payload)), 503, "Unavailable");
  });
});

describe.skipIf(!needs("STRIPE_MOCK_URL", "billing against stripe-mock"))("billing against stripe-mock", () => {
  let stack: TestStack;
  let admin: ApiClient;
  beforeAll(async () => {
    stack = await startStack("sqlite", {
      memoryBus: true,
      identity: { STRIPE_SECRET_KEY: "sk_test_123", STRIPE_API_BASE: testServers.stripeMockUrl, ...billingUrls },
    });
    admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
  });
  afterAll(() => stack?.close());

  it("opens a Checkout session (201 redirect_url) through the real SDK and API shapes", async () => {
    const res = await admin.post("/billing/checkout-session", { price_lookup_key: "pro_monthly" });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(() => new URL(checkoutSessionSchema.parse(res.body).redirect_url)).not.toThrow();
  });

  it("opens a customer-portal session (201 billing_management_url)", async () => {
    const res = await admin.post("/billing/management-url");
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(() => new URL(billingManagementUrlSchema.parse(res.body).billing_management_url)).not.toThrow();
  });
});
