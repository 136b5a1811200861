import { DependencyDown } from "@loom/runtime/dependency-down";
import Stripe from "stripe";

/**
 * The official SDK, pointed at `apiBase` when given (stripe-mock, a test's
 * fake): its host, port and protocol options. Retries cover Stripe's 409 for
 * a concurrent request with the same idempotency key, and brief outages.
 */
export function createStripeClient(secretKey: string, apiBase?: string): Stripe {
  const base = apiBase ? new URL(apiBase) : undefined;
  const protocol = base?.protocol === "http:" ? "http" : "https";
  return new Stripe(secretKey, {
    maxNetworkRetries: 2,
    timeout: 10_000,
    ...(base ? { host: base.hostname, port: base.port || (protocol === "http" ? 80 : 443), protocol } : {}),
  });
}

/**
 * Runs one Stripe call; Stripe unreachable, rate limiting or a 5xx becomes
 * DependencyDown (503 to the caller), since the SDK's errors are its own
 * classes that kit cannot know. Anything else stays as it is (500, logged).
 */
export async function callStripe<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const down =
      error instanceof Stripe.errors.StripeConnectionError ||
      error instanceof Stripe.errors.StripeRateLimitError ||
      (error instanceof Stripe.errors.StripeError && (error.statusCode ?? 0) >= 500);
    if (down) throw new DependencyDown("Stripe", { cause: error });
    throw error;
  }
}

/**
 * The SDK's webhook signatures (constructEvent; generateTestHeaderString for
 * tests), which need no API key though the SDK wants one to be built.
 */
export const stripeWebhooks = new Stripe("sk_webhooks_only").webhooks;
