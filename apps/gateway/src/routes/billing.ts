import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import { defineOperation } from "../operation.ts";
import { billingManagementUrlSchema, checkoutSessionSchema } from "../schemas.ts";
import { boundedName } from "../validation.ts";

/** Billing through Stripe (docs/behaviour.md §8); the webhook Stripe calls is stripe-webhook.ts. */
export function billingOperations({ billing }: ServiceClients) {
  return [
    defineOperation({
      id: "CreateCheckoutSession",
      method: "POST",
      path: "/billing/checkout-session",
      summary: "A Stripe Checkout session for the price with the given lookup key",
      // Stripe's lookup keys are at most 200 characters.
      body: {
        schema: z.object({
          price_lookup_key: boundedName(200).meta({
            description: "The lookup key of the Stripe price to subscribe to",
          }),
        }),
        required: true,
      },
      response: { status: 201, description: "Where to send the user to pay", schema: checkoutSessionSchema },
      async handle({ body, call }) {
        const res = await billing.createCheckoutSession({ priceLookupKey: body.price_lookup_key }, call);
        return { redirect_url: res.redirectUrl };
      },
    }),
    defineOperation({
      id: "CreateBillingManagementUrl",
      method: "POST",
      path: "/billing/management-url",
      summary: "A Stripe customer-portal link where the organization manages its billing",
      response: { status: 201, description: "The customer-portal link", schema: billingManagementUrlSchema },
      async handle({ call }) {
        const res = await billing.createBillingManagementUrl({}, call);
        return { billing_management_url: res.billingManagementUrl };
      },
    }),
  ];
}
