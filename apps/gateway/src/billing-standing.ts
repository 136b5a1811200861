import type { CallOptions, Client } from "@connectrpc/connect";
import type { BillingService } from "@loom/proto/identity/v1/billing_pb";

/** Passes when the caller's organization may use a paid operation; 402 (via the error table) when billing is required and not paid. */
export type BillingStanding = (call: CallOptions) => Promise<void>;

/**
 * The check before a paid operation (a run's create, a chat call). Identity
 * decides (`CheckBillingStanding`), but only when `BILLING_REQUIRED` is on:
 * off, every organization is in good standing, so the gateway passes without
 * the RPC (docs/decisions.md, "Billing standing: asked only when required").
 */
export function billingStanding(billing: Client<typeof BillingService>, required: boolean): BillingStanding {
  if (!required) return async () => {};
  return async (call) => {
    await billing.checkBillingStanding({}, call);
  };
}
