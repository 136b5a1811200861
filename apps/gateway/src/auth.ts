import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import { unauthenticated } from "@loom/contracts/errors";
import type { IdentityService } from "@loom/proto/identity/v1/identity_pb";
import type { Context, Next } from "koa";
import { callHeaders } from "./call-headers.ts";
import { type Authenticated, credentialKey, type PrincipalCache } from "./principal-cache.ts";
import type { Revocations } from "./revocations.ts";

const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/**
 * Resolves the bearer credential once per request; every route sits behind
 * it. With a cache, a known credential skips the round trip to identity.
 * Leaves `principal`, `apiKeyId` ("" for an access token) and
 * `credentialKey` (what per-credential limits count by) in ctx.state.
 */
export function authenticate(
  identity: Client<typeof IdentityService>,
  cache: PrincipalCache | undefined,
  revocations: Revocations,
) {
  return async (ctx: Context, next: Next) => {
    const credential = bearer.exec(ctx.get("Authorization"))?.[1];
    if (!credential) throw unauthenticated("an Authorization: Bearer credential is required");
    const key = credentialKey(credential);
    let known: Authenticated | undefined = cache?.get(key);
    if (!known) {
      const ask = async () => {
        const asked = revocations.mark();
        const answer = await identity.authenticate({ credential }, { headers: callHeaders(ctx) });
        if (!answer.principal) throw unauthenticated();
        const { userId, organizationId, apiKeyId } = answer.principal;
        // Identity may have looked the key up just before it was deleted, and
        // the deletion been heard while the answer travelled: such an answer is not trusted.
        const crossed = apiKeyId !== "" && revocations.revokedSince(apiKeyId, asked);
        return { known: { principal: { userId, organizationId }, apiKeyId }, until: answer.cacheableUntil, crossed };
      };
      let answer = await ask();
      // Identity deletes before it announces: asked again, it knows (a key
      // that is gone is its 401). Only crossing twice is refused here.
      if (answer.crossed) answer = await ask();
      if (answer.crossed) throw unauthenticated();
      known = answer.known;
      if (cache && answer.until) cache.put(key, known.principal, known.apiKeyId, timestampDate(answer.until));
    }
    ctx.state.principal = known.principal;
    ctx.state.apiKeyId = known.apiKeyId;
    ctx.state.credentialKey = key;
    await next();
  };
}
