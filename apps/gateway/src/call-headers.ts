import type { Context } from "koa";
import { traceHeadersFor } from "./trace-requests.ts";

/**
 * The headers every Connect call made for a request carries: its request id
 * (the services' logs name it) and, when its trace is not sampled, that
 * trace (`traceHeadersFor`).
 */
export function callHeaders(ctx: Context): Record<string, string> {
  return { ...traceHeadersFor(ctx), "x-request-id": String(ctx.state.requestId) };
}
