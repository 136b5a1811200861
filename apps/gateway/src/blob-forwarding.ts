import { pipeline } from "node:stream/promises";
import { type BlobRequest, type BlobResponse, blobPathPrefix, type ServeBlob } from "@loom/blob-plane/exchange";
import { unavailableIfDown } from "@loom/runtime/dependency-down";
import { clientGoneSignal } from "@loom/server/client-gone";
import type { Logger } from "@loom/telemetry/logger";
import type { Context, Next } from "koa";

const allowed = "GET, HEAD, PUT";

/**
 * Signed blob URLs (`/blobs/<token>`, and under `/api`): the data plane of
 * docs/behaviour.md §7. Mounted ahead of authentication — the token is the
 * credential, the storage service checks it — and ahead of the JSON body
 * reader: the request's bytes stream into `serve` and its answer's bytes
 * stream back, with backpressure, whatever their size. A refusal is a
 * ConnectError like any other, answered by the one error table. Not rate
 * limited per credential: there is none (docs/decisions.md, "Storage").
 */
export function forwardBlobs(serve: ServeBlob, logger: Logger) {
  return async (ctx: Context, next: Next): Promise<void> => {
    if (!ctx.path.startsWith(blobPathPrefix)) return next();
    ctx.state.operationId = "blobs"; // for the request metrics: not a documented operation
    const method = ctx.method;
    if (method === "OPTIONS") {
      ctx.set("Allow", allowed);
      ctx.status = 204;
      return;
    }
    if (method !== "GET" && method !== "HEAD" && method !== "PUT") {
      throw Object.assign(new Error(`${method} is not allowed here; allowed: ${allowed}`), {
        status: 405,
        headers: { Allow: allowed },
      });
    }
    const signal = clientGoneSignal(ctx.res);
    // An answer given before the upload was read whole (a refused token, a
    // body over the limit) leaves the rest on the connection: close it after
    // answering rather than read what nobody wants (as the JSON body reader does).
    const closeIfUnread = () => {
      if (method === "PUT" && !ctx.req.complete) ctx.set("Connection", "close");
    };
    const request: BlobRequest = {
      method,
      token: ctx.path.slice(blobPathPrefix.length),
      headers: ctx.req.headers,
      body: method === "PUT" ? ctx.req : undefined,
      signal,
    };
    let answer: BlobResponse;
    try {
      answer = await serve(request);
    } catch (error) {
      if (signal.aborted) {
        // Nobody is left to answer.
        ctx.respond = false;
        return;
      }
      closeIfUnread();
      const answered = unavailableIfDown(error);
      if (answered !== error)
        logger.warn({ err: error, request_id: ctx.state.requestId }, "a blob request met a dependency that is down");
      throw answered;
    }
    closeIfUnread();
    // The answer is written here, not by Koa: its body is piped with Node's
    // pipeline, which ends or destroys both sides together.
    ctx.respond = false;
    ctx.res.writeHead(answer.status, answer.headers);
    if (!answer.body || method === "HEAD") {
      answer.body?.destroy();
      ctx.res.end();
      return;
    }
    try {
      await pipeline(answer.body, ctx.res);
    } catch (error) {
      // The client sees a cut answer, which is what happened.
      if (!signal.aborted) logger.warn({ err: error, request_id: ctx.state.requestId }, "a blob answer broke off");
    }
  };
}
