import { randomUUID } from "node:crypto";
import type { Context, Next } from "koa";

const sane = /^[A-Za-z0-9._:-]{1,128}$/;

/** Every response carries X-Request-Id: the caller's when it is sane, else a new one. */
export async function requestId(ctx: Context, next: Next): Promise<void> {
  const given = ctx.get("X-Request-Id");
  const id = sane.test(given) ? given : randomUUID();
  ctx.state.requestId = id;
  ctx.set("X-Request-Id", id);
  await next();
}
