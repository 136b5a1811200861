import type { Client } from "@connectrpc/connect";
import { unauthenticated } from "@loom/kit/errors";
import type { IdentityService } from "@loom/proto/identity/v1/identity_pb";
import type { Context, Next } from "koa";

const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/** Resolves the bearer credential once per request; every route sits behind it. */
export function authenticate(identity: Client<typeof IdentityService>) {
  return async (ctx: Context, next: Next) => {
    const credential = bearer.exec(ctx.get("Authorization"))?.[1];
    if (!credential) throw unauthenticated("an Authorization: Bearer credential is required");
    const { principal } = await identity.authenticate({ credential }, { headers: { "x-request-id": String(ctx.state.requestId) } });
    if (!principal) throw unauthenticated();
    ctx.state.principal = { userId: principal.userId, organizationId: principal.organizationId };
    await next();
  };
}
