import type { Client } from "@connectrpc/connect";
import type { BillingService } from "@loom/proto/identity/v1/billing_pb";
import type { Middleware } from "koa";
import { readRawBody } from "./body.ts";
import { callHeaders } from "./call-headers.ts";

export const stripeWebhookPath = "/billing/stripe-webhook";

/**
 * `POST /billing/stripe-webhook`, which Stripe calls: no bearer credential
 * (the Stripe signature is one, and identity checks it), so it is mounted
 * ahead of authentication; the body goes on as the exact bytes received,
 * which the signature covers. 200 `{"received": true}` for every event
 * identity accepted, replays and ignored types included.
 */
export function stripeWebhook(billing: Client<typeof BillingService>): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== stripeWebhookPath) return next();
    if (ctx.method !== "POST") return next(); // answered like any unknown route, after authentication
    ctx.state.operationId = "stripe_webhook"; // for the request metrics: not a documented operation
    const payload = await readRawBody(ctx);
    await billing.handleStripeWebhook(
      { payload, signature: ctx.get("Stripe-Signature") },
      { headers: callHeaders(ctx) },
    );
    ctx.status = 200;
    ctx.body = { received: true };
  };
}
