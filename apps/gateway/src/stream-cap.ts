import type { Context, Next } from "koa";
import { rateLimitRefusals } from "@loom/kit/metrics";
import { rateLimited } from "./errors.ts";

const refusals = rateLimitRefusals.labels("streams");

/**
 * At most `limit` SSE streams open at once per credential on this replica, so
 * one key cannot hold a crowd of sockets and follows. Runs before the stream's
 * handler: a refused stream costs no RPC and opens no upstream follow. The
 * slot is given back when the response closes, however it ends (the run's
 * end, the client hanging up, an error before streaming).
 */
export function streamCap(limit: number) {
  const open = new Map<string, number>();
  return async (ctx: Context, next: Next) => {
    const key = ctx.state.credentialKey as string;
    const count = open.get(key) ?? 0;
    if (count >= limit) {
      refusals.inc();
      throw rateLimited(`at most ${limit} event streams may be open at once per credential`);
    }
    open.set(key, count + 1);
    // Node emits "close" once per response, whatever ended it.
    ctx.res.once("close", () => {
      const left = open.get(key)! - 1;
      if (left === 0) open.delete(key);
      else open.set(key, left);
    });
    await next();
  };
}
