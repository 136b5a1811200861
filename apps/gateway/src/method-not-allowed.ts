import type { Context, Next } from "koa";

interface MatchedLayer {
  methods: string[];
}

/**
 * A known path asked with a method it does not serve is 405 with `Allow`
 * (RFC 9110 §15.5.6), whatever the method: also one the router does not know
 * (TRACE, QUERY), which @koa/router would answer 501. OPTIONS answers 204
 * with `Allow`. Runs around the routes.
 */
export async function methodNotAllowed(ctx: Context, next: Next): Promise<void> {
  await next();
  if (ctx.status !== 404 || ctx.body !== undefined) return;
  const matched = (ctx as Context & { matched?: MatchedLayer[] }).matched ?? [];
  const allowed = [...new Set(matched.flatMap((layer) => layer.methods))];
  if (allowed.length === 0) return;
  if (ctx.method === "OPTIONS") {
    ctx.set("Allow", allowed.join(", "));
    ctx.status = 204;
    return;
  }
  throw Object.assign(new Error(`${ctx.method} is not allowed here; allowed: ${allowed.join(", ")}`), {
    status: 405,
    headers: { Allow: allowed.join(", ") },
  });
}
