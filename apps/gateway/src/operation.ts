import type { Readable } from "node:stream";
import type { Router } from "@koa/router";
import { clientGoneSignal } from "@loom/server/client-gone";
import { headersFor, type Principal } from "@loom/server/principal";
import type { Context, Middleware } from "koa";
import type { z } from "zod";
import type { BillingStanding } from "./billing-standing.ts";
import { bodyLimits, readJsonBody } from "./body.ts";
import { callHeaders } from "./call-headers.ts";
import { trackSseConnection } from "./metrics.ts";
import { nameRequestSpan } from "./trace-requests.ts";
import { parseInput } from "./validation.ts";

export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/** What a handler gets: validated input, the principal, and options for its RPC calls. */
export interface OperationInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  principal: Principal;
  /** Pass to every RPC: carries the principal and the request id to services. */
  call: { headers: Record<string, string>; signal: AbortSignal };
  ctx: Context;
}

/**
 * One public operation: where it lives, what it takes, what it answers. The
 * same object mounts the route and documents it in /openapi.json, so the two
 * cannot drift apart.
 */
export interface Operation<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
> {
  id: string;
  method: HttpMethod;
  /** OpenAPI-style path, e.g. `/api-keys/{api_key_id}`. */
  path: string;
  /**
   * The path parameter, last in `path`, that takes the rest of the path,
   * slashes included (asset names: `/buckets/{bucket_id}/assets/{name}`
   * matches `.../assets/dir/file.txt` as well as `.../assets/dir%2Ffile.txt`).
   * /openapi.json still shows `{name}`; clients that encode `/` are served too.
   */
  restOfPath?: string;
  summary: string;
  params?: P;
  query?: Q;
  /** `documented`: the shape /openapi.json shows, when the handler parses the body itself (several accepted forms). */
  body?: { schema: B; required: boolean; limit?: number; documented?: z.ZodType };
  /**
   * A paid operation (a run, a chat call): billing standing is checked after
   * the input and before the handler, so it may answer 402, and /openapi.json
   * lists 402 on it and on no other operation.
   */
  paid?: boolean;
  /** `stream`: the handler returns SSE frames instead of JSON (a Readable, or a Buffer of a whole finished stream); `schema` is then one event's `data`; `eventIds`: every event has an `id:` (a resumable stream). */
  response: { status: number; description: string; schema?: z.ZodType; stream?: boolean; eventIds?: boolean };
  handle(input: OperationInput<z.output<P>, z.output<Q>, z.output<B>>): Promise<unknown>;
}

export function defineOperation<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType>(
  op: Operation<P, Q, B>,
): Operation {
  return op as unknown as Operation;
}

/**
 * `/api-keys/{api_key_id}` → `/api-keys/:api_key_id`; the rest-of-path
 * parameter becomes a wildcard (`*name`, path-to-regexp v8): one or more
 * characters, `/` included, percent-decoded by the router like the others.
 */
export function routerPath(path: string, restOfPath?: string): string {
  return path.replace(/\{(\w+)\}/g, (_, name: string) => (name === restOfPath ? `*${name}` : `:${name}`));
}

/**
 * `beforeStream` runs ahead of every stream operation's handler (open-streams.ts: the stream caps, and stopping
 * streams of deleted keys); `billingStanding` ahead of every paid operation's.
 */
export function mountOperations(
  router: Router,
  operations: Operation[],
  options: { beforeStream?: Middleware; billingStanding?: BillingStanding } = {},
): void {
  for (const op of operations) {
    const answer = async (ctx: Context) => {
      nameRequestSpan(op.id, op.path);
      const params = op.params ? parseInput("path", op.params, ctx.params) : {};
      const query = op.query ? parseInput("query", op.query, ctx.query) : {};
      let body: unknown;
      if (op.body) {
        const raw = await readJsonBody(ctx, op.body.limit ?? bodyLimits.default);
        body = raw === undefined && !op.body.required ? undefined : parseInput("body", op.body.schema, raw);
      }
      const principal = ctx.state.principal as Principal;
      // Aborts the handler's RPCs when the client goes away before the answer,
      // and a stream's also when it must stop (its key deleted: open-streams.ts).
      const signal = (ctx.state.streamStop as AbortSignal | undefined) ?? clientGoneSignal(ctx.res);
      const call = { headers: { ...headersFor(principal), ...callHeaders(ctx) }, signal };
      // 402 when billing is required and not paid.
      if (op.paid) await options.billingStanding?.(call);
      const result = await op.handle({ params, query, body, principal, call, ctx });
      if (op.response.stream) {
        ctx.status = op.response.status;
        ctx.set({
          "Content-Type": "text/event-stream; charset=utf-8",
          "Cache-Control": "no-cache",
          "X-Accel-Buffering": "no",
        });
        ctx.req.socket.setNoDelay(true);
        trackSseConnection(ctx.res);
        writeStream(ctx, result as Readable | Buffer);
        return;
      }
      // No body: Koa sends an explicit null body as an empty response, but
      // setting it forces 204, so the documented status is set after it (202 stays 202).
      ctx.body = result === undefined ? null : result;
      ctx.status = op.response.status;
    };
    const before = op.response.stream && options.beforeStream ? [options.beforeStream] : [];
    // Named by the operation id: the request metrics' label (the router leaves it in ctx._matchedRouteName).
    router.register(routerPath(op.path, op.restOfPath), [op.method], [...before, answer], { name: op.id });
  }
}

/**
 * A stream's answer, written here rather than by Koa: Koa pipes a stream body
 * with Node's `stream.pipeline`, which builds an AbortController per response
 * and aborts it, a DOMException with its stack, when the response ends — a
 * cost per followed run. `pipe` moves the bytes the same way; the stream is
 * let go when the response closes, however it ends.
 */
function writeStream(ctx: Context, stream: Readable | Buffer): void {
  ctx.respond = false;
  const res = ctx.res;
  res.writeHead(ctx.status);
  if (Buffer.isBuffer(stream)) {
    res.end(stream);
    return;
  }
  stream.once("error", () => res.destroy());
  res.once("close", () => stream.destroy());
  stream.pipe(res);
}
