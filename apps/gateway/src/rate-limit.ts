import type { Context, Next } from "koa";
import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import { rateLimitRefusals } from "@loom/kit/metrics";
import { rateLimited } from "./errors.ts";

const refusals = rateLimitRefusals.labels("requests");

/**
 * Per-credential rate limit (semantics.md §9): `requests` per fixed window of
 * `windowSeconds`, counted in this replica's memory by the credential's hash.
 * Every answer it lets through, and the 429, carries the RateLimit header
 * fields of draft-ietf-httpapi-ratelimit-headers-06.
 * Sits after authentication: an unknown credential gets its 401 unlimited.
 */
export function rateLimit({ requests, windowSeconds }: { requests: number; windowSeconds: number }) {
  const limiter = new RateLimiterMemory({ points: requests, duration: windowSeconds });
  const policy = `${requests};w=${windowSeconds}`;
  const advertise = (ctx: Context, state: RateLimiterRes) => {
    ctx.set({
      "RateLimit-Policy": policy,
      "RateLimit-Limit": String(requests),
      "RateLimit-Remaining": String(state.remainingPoints),
      "RateLimit-Reset": String(Math.max(0, Math.ceil(state.msBeforeNext / 1000))),
    });
  };
  return async (ctx: Context, next: Next) => {
    let state: RateLimiterRes;
    try {
      state = await limiter.consume(ctx.state.credentialKey as string);
    } catch (rejected) {
      if (!(rejected instanceof RateLimiterRes)) throw rejected;
      advertise(ctx, rejected);
      refusals.inc();
      throw rateLimited(`over the rate limit of ${requests} requests per ${windowSeconds} s for this credential`, rejected.msBeforeNext);
    }
    advertise(ctx, state);
    await next();
  };
}
