import type { Client } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { unauthenticated } from "@loom/kit/errors";
import type { IdentityService } from "@loom/proto/identity/v1/identity_pb";
import type { Context, Next } from "koa";
import { callHeaders } from "./call-headers.ts";
import { credentialKey, type PrincipalCache } from "./principal-cache.ts";

const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/**
 * Resolves the bearer credential once per request; every route sits behind
 * it. With a cache, a known credential skips the round trip to identity.
 * Leaves `principal` and `credentialKey` (what per-credential limits count by) in ctx.state.
 */
export function authenticate(identity: Client<typeof IdentityService>, cache: PrincipalCache | undefined) {
  return async (ctx: Context, next: Next) => {
    const credential = bearer.exec(ctx.get("Authorization"))?.[1];
    if (!credential) throw unauthenticated("an Authorization: Bearer credential is required");
    const key = credentialKey(credential);
    let principal = cache?.get(key);
    if (!principal) {
      const answer = await identity.authenticate({ credential }, { headers: callHeaders(ctx) });
      if (!answer.principal) throw unauthenticated();
      principal = { userId: answer.principal.userId, organizationId: answer.principal.organizationId };
      if (cache && answer.cacheableUntil) cache.put(key, principal, answer.principal.apiKeyId, timestampDate(answer.cacheableUntil));
    }
    ctx.state.principal = principal;
    ctx.state.credentialKey = key;
    await next();
  };
}
