import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";
import { invalidArgument, unavailable } from "@loom/contracts/errors";
import { PaymentRequiredSchema } from "@loom/proto/common/v1/common_pb";
import { BillingService } from "@loom/proto/identity/v1/billing_pb";
import { requirePrincipal } from "@loom/server/principal";
import type { Logger } from "@loom/telemetry/logger";
import type Stripe from "stripe";
import type { IdentityStore } from "../store/port.ts";
import { callStripe, createStripeClient, stripeWebhooks } from "./stripe-client.ts";

export interface BillingSettings {
  STRIPE_SECRET_KEY?: string | undefined;
  STRIPE_WEBHOOK_SECRET?: string | undefined;
  STRIPE_API_BASE?: string | undefined;
  BILLING_RETURN_URL?: string | undefined;
  BILLING_SUCCESS_URL?: string | undefined;
  BILLING_CANCEL_URL?: string | undefined;
  BILLING_REQUIRED?: boolean | undefined;
}

export interface BillingDeps {
  store: IdentityStore;
  settings: BillingSettings;
  logger: Logger;
  now?: () => Date;
}

/** Subscription statuses that let an organization use paid operations. */
const inGoodStanding = new Set(["active", "trialing"]);
const lookupKeyPath = "body.price_lookup_key";
const signaturePath = "headers.stripe-signature";

/** Billing through Stripe (docs/behaviour.md §8, docs/decisions.md "Billing"). */
export function createBillingService(deps: BillingDeps): ServiceImpl<typeof BillingService> {
  const { store, settings, logger } = deps;
  const now = deps.now ?? (() => new Date());
  const stripe = settings.STRIPE_SECRET_KEY
    ? createStripeClient(settings.STRIPE_SECRET_KEY, settings.STRIPE_API_BASE)
    : undefined;
  const returnUrl = settings.BILLING_RETURN_URL ?? "";

  function configured(): Stripe {
    if (!stripe) throw unavailable("billing is not configured: STRIPE_SECRET_KEY is not set");
    return stripe;
  }

  /**
   * The organization's one Stripe customer, created on first need. The
   * idempotency key is the organization's, so concurrent first calls get the
   * same customer from Stripe; the store keeps the first id written.
   */
  async function customerOf(stripe: Stripe, organizationId: string): Promise<string> {
    const known = (await store.getBilling(organizationId))?.stripeCustomerId;
    if (known) return known;
    const customer = await callStripe(() =>
      stripe.customers.create(
        { metadata: { organization_id: organizationId } },
        { idempotencyKey: `loom-organization-customer-${organizationId}` },
      ),
    );
    return store.setStripeCustomer(organizationId, customer.id);
  }

  async function managementUrl(stripe: Stripe, organizationId: string): Promise<string> {
    const customer = await customerOf(stripe, organizationId);
    const session = await callStripe(() => stripe.billingPortal.sessions.create({ customer, return_url: returnUrl }));
    return session.url;
  }

  async function recordSubscription(event: Stripe.Event): Promise<boolean> {
    const subscription = event.data.object as Stripe.Subscription;
    const customerId = typeof subscription.customer === "string" ? subscription.customer : subscription.customer?.id;
    const organizationId =
      (customerId ? await store.findOrganizationByStripeCustomer(customerId) : undefined) ??
      subscription.metadata?.organization_id;
    if (!organizationId) {
      logger.warn(
        { event_id: event.id, customer: customerId },
        "a Stripe subscription event for a customer of no organization: ignored",
      );
      return false;
    }
    const price = subscription.items?.data?.[0]?.price;
    return store.recordSubscription(organizationId, {
      status: subscription.status,
      plan: price?.lookup_key ?? price?.id ?? "",
      subscriptionId: subscription.id,
      eventCreatedAt: new Date(event.created * 1000),
    });
  }

  return {
    async createCheckoutSession(req, ctx) {
      const principal = requirePrincipal(ctx);
      const stripe = configured();
      const lookupKey = req.priceLookupKey;
      if (lookupKey === "") throw invalidArgument([{ path: lookupKeyPath, message: "must not be empty" }]);
      const prices = await callStripe(() => stripe.prices.list({ lookup_keys: [lookupKey], active: true, limit: 1 }));
      const price = prices.data[0];
      if (!price)
        throw invalidArgument([{ path: lookupKeyPath, message: `no active price has the lookup key "${lookupKey}"` }]);
      const customer = await customerOf(stripe, principal.organizationId);
      const metadata = { organization_id: principal.organizationId };
      const session = await callStripe(() =>
        stripe.checkout.sessions.create({
          mode: price.type === "recurring" ? "subscription" : "payment",
          customer,
          client_reference_id: principal.organizationId,
          line_items: [{ price: price.id, quantity: 1 }],
          success_url: settings.BILLING_SUCCESS_URL ?? returnUrl,
          cancel_url: settings.BILLING_CANCEL_URL ?? returnUrl,
          metadata,
          ...(price.type === "recurring" ? { subscription_data: { metadata } } : {}),
        }),
      );
      if (!session.url) throw new Error("Stripe answered a Checkout session without a URL");
      return { redirectUrl: session.url };
    },

    async createBillingManagementUrl(_req, ctx) {
      const principal = requirePrincipal(ctx);
      return { billingManagementUrl: await managementUrl(configured(), principal.organizationId) };
    },

    async checkBillingStanding(_req, ctx) {
      const principal = requirePrincipal(ctx);
      if (!settings.BILLING_REQUIRED) return {};
      const status = (await store.getBilling(principal.organizationId))?.subscription?.status;
      if (status && inGoodStanding.has(status)) return {};
      const url = await managementUrl(configured(), principal.organizationId);
      throw new ConnectError(
        `this organization has no active subscription (${status ?? "none"}): manage billing at ${url}`,
        Code.FailedPrecondition,
        undefined,
        [{ desc: PaymentRequiredSchema, value: create(PaymentRequiredSchema, { billingManagementUrl: url }) }],
      );
    },

    async handleStripeWebhook(req) {
      const secret = settings.STRIPE_WEBHOOK_SECRET;
      if (!secret) throw unavailable("billing webhooks are not configured: STRIPE_WEBHOOK_SECRET is not set");
      if (req.signature === "") throw invalidArgument([{ path: signaturePath, message: "is required" }]);
      let event: Stripe.Event;
      try {
        event = stripeWebhooks.constructEvent(Buffer.from(req.payload), req.signature, secret);
      } catch {
        throw invalidArgument([{ path: signaturePath, message: "does not match the payload (or is too old)" }]);
      }
      // A replay changes nothing. Marked after applying: a delivery that fails
      // half-way is retried by Stripe and applied again, which is harmless
      // (an older event never overwrites a newer one).
      if (await store.stripeEventSeen(event.id)) return { applied: false };
      const applied = event.type.startsWith("customer.subscription.") ? await recordSubscription(event) : false;
      await store.markStripeEventSeen(event.id, now());
      return { applied };
    },
  };
}
