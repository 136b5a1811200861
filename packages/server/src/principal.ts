import { Code, ConnectError, createContextKey, type HandlerContext } from "@connectrpc/connect";

/** Who is acting, and for which organization (semantics.md §3). */
export interface Principal {
  userId: string;
  organizationId: string;
}

/**
 * Headers that carry the principal from the gateway to services. Services
 * trust them only on requests that also carry the shared service token.
 */
export const principalHeaders = {
  userId: "x-loom-user-id",
  organizationId: "x-loom-organization-id",
  serviceToken: "x-loom-service-token",
} as const;

export const principalKey = createContextKey<Principal | undefined>(undefined, { description: "principal" });

export function headersFor(principal: Principal): Record<string, string> {
  return { [principalHeaders.userId]: principal.userId, [principalHeaders.organizationId]: principal.organizationId };
}

/** The principal of an RPC; UNAUTHENTICATED when the gateway passed none. */
export function requirePrincipal(ctx: HandlerContext): Principal {
  const principal = ctx.values.get(principalKey);
  if (!principal) throw new ConnectError("this operation needs a principal", Code.Unauthenticated);
  return principal;
}
