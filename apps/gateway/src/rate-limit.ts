import { rateLimitRefusals } from "@loom/telemetry/metrics";
import type { Context, Next } from "koa";
import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import { rateLimited } from "./errors.ts";

const refusals = rateLimitRefusals.labels("requests");

/** One quota: `requests` per window, counted by what `keyOf` names (a credential, an organization). */
interface Quota {
  scope: "credential" | "organization";
  requests: number;
  keyOf: (ctx: Context) => string;
  limiter: RateLimiterMemory;
}

/**
 * Rate limits (docs/behaviour.md §9): per credential (`perCredential`, counted by
 * the credential's hash) and per organization (`perOrganization`, counted by
 * its id, over all its credentials), each per fixed window of `windowSeconds`
 * in this replica's memory; either may be off. Every answer it lets through,
 * and the 429, carries the RateLimit header fields of
 * draft-ietf-httpapi-ratelimit-headers-06: the policy lists every quota, the
 * other fields are those of the quota closest to its end (the one that refused, on a 429).
 * Sits after authentication: an unknown credential gets its 401 unlimited.
 */
export function rateLimit(options: { perCredential?: number; perOrganization?: number; windowSeconds: number }) {
  const { windowSeconds } = options;
  const quota = (scope: Quota["scope"], requests: number | undefined, keyOf: Quota["keyOf"]): Quota[] =>
    requests
      ? [{ scope, requests, keyOf, limiter: new RateLimiterMemory({ points: requests, duration: windowSeconds }) }]
      : [];
  const quotas = [
    ...quota("credential", options.perCredential, (ctx) => ctx.state.credentialKey as string),
    ...quota(
      "organization",
      options.perOrganization,
      (ctx) => (ctx.state.principal as { organizationId: string }).organizationId,
    ),
  ];
  const policy = quotas.map((q) => `${q.requests};w=${windowSeconds}`).join(", ");
  const advertise = (ctx: Context, quota: Quota, state: RateLimiterRes) => {
    ctx.set({
      "RateLimit-Policy": policy,
      "RateLimit-Limit": String(quota.requests),
      "RateLimit-Remaining": String(state.remainingPoints),
      "RateLimit-Reset": String(Math.max(0, Math.ceil(state.msBeforeNext / 1000))),
    });
  };
  return async (ctx: Context, next: Next) => {
    let closest: { quota: Quota; state: RateLimiterRes } | undefined;
    // In order: a credential over its own quota does not spend its organization's.
    for (const quota of quotas) {
      let state: RateLimiterRes;
      try {
        state = await quota.limiter.consume(quota.keyOf(ctx));
      } catch (rejected) {
        if (!(rejected instanceof RateLimiterRes)) throw rejected;
        advertise(ctx, quota, rejected);
        refusals.inc();
        throw rateLimited(
          `over the rate limit of ${quota.requests} requests per ${windowSeconds} s for this ${quota.scope}`,
          rejected.msBeforeNext,
        );
      }
      if (!closest || state.remainingPoints < closest.state.remainingPoints) closest = { quota, state };
    }
    if (closest) advertise(ctx, closest.quota, closest.state);
    await next();
  };
}
