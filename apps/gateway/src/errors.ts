import { Code, ConnectError } from "@connectrpc/connect";
import { fieldViolationsOf } from "@loom/contracts/errors";
import { PaymentRequiredSchema } from "@loom/proto/common/v1/common_pb";
import type { Logger } from "@loom/telemetry/logger";
import type { Context, Next } from "koa";

/**
 * The one table from error codes to HTTP (docs/behaviour.md §2). Services and the
 * gateway raise ConnectErrors; only this file knows status codes.
 * OUT_OF_RANGE is raised only by the gateway's body reader, for bodies over the limit.
 * `retryAfter` is the default wait; an error that knows its real wait carries
 * it (see `rateLimited`), and the table still decides whether one is sent.
 */
const httpOf: Partial<Record<Code, { status: number; type: string; retryAfter?: number }>> = {
  [Code.InvalidArgument]: { status: 400, type: "ValidationError" },
  [Code.Unauthenticated]: { status: 401, type: "Unauthorized" },
  [Code.PermissionDenied]: { status: 403, type: "Forbidden" },
  [Code.NotFound]: { status: 404, type: "NotFound" },
  [Code.AlreadyExists]: { status: 409, type: "Conflict" },
  [Code.Aborted]: { status: 409, type: "Conflict" },
  [Code.FailedPrecondition]: { status: 409, type: "Conflict" },
  [Code.OutOfRange]: { status: 413, type: "PayloadTooLarge" },
  [Code.ResourceExhausted]: { status: 429, type: "RateLimited", retryAfter: 1 },
  [Code.Unavailable]: { status: 503, type: "Unavailable", retryAfter: 5 },
  [Code.DeadlineExceeded]: { status: 503, type: "Unavailable", retryAfter: 5 },
};
const serviceError = { status: 500, type: "ServiceError" };
/** A FAILED_PRECONDITION that only paying lifts (it carries a PaymentRequired detail; BILLING_REQUIRED). */
const paymentRequired = { status: 402, type: "PaymentRequired" };

function httpOfError(error: unknown) {
  if (!(error instanceof ConnectError)) return undefined;
  if (error.code === Code.FailedPrecondition && error.findDetails(PaymentRequiredSchema).length > 0)
    return paymentRequired;
  return httpOf[error.code];
}

/** Koa's own HTTP errors (unknown path, wrong method) in the same body shape. */
const typeOfStatus: Record<number, string> = { 404: "NotFound", 405: "MethodNotAllowed" };

/**
 * RESOURCE_EXHAUSTED from the gateway's own limits. A limiter that knows when
 * the caller may try again passes the wait; it travels as the error's
 * `retry-after` metadata (Connect's place for headers on an error), rounded up
 * to whole seconds. Without it, the table's default applies.
 */
export function rateLimited(message: string, retryAfterMs?: number): ConnectError {
  const metadata =
    retryAfterMs === undefined ? undefined : { "retry-after": String(Math.max(1, Math.ceil(retryAfterMs / 1000))) };
  return new ConnectError(message, Code.ResourceExhausted, metadata);
}

/** Whole seconds from an error's `retry-after` metadata, if it carries a sane one. */
function retryAfterOf(error: ConnectError): string | undefined {
  const value = error.metadata.get("retry-after");
  return value && /^[1-9]\d{0,5}$/.test(value) ? value : undefined;
}

export interface ErrorItem {
  message: string;
  path?: string;
}

export function errorBody(type: string, errors: ErrorItem[], requestId: string) {
  return { type, errors, request_id: requestId };
}

/** Catches everything below it and answers with the error shape; never leaks internals. */
export function errorHandler(logger: Logger) {
  return async (ctx: Context, next: Next) => {
    try {
      await next();
      // (An answer written by a route itself, ctx.respond false, is left alone.)
      if (ctx.respond !== false && ctx.status === 404 && ctx.body === undefined) {
        throw new ConnectError(`no route for ${ctx.method} ${ctx.path}`, Code.NotFound);
      }
    } catch (error) {
      const requestId = String(ctx.state.requestId ?? "");
      const koaStatus = (error as { status?: unknown }).status;
      if (!(error instanceof ConnectError) && typeof koaStatus === "number" && typeOfStatus[koaStatus]) {
        ctx.status = koaStatus;
        const headers = (error as { headers?: Record<string, string> }).headers;
        if (headers) ctx.set(headers); // e.g. Allow on a 405
        ctx.body = errorBody(typeOfStatus[koaStatus]!, [{ message: (error as Error).message }], requestId);
        return;
      }
      const known: { status: number; type: string; retryAfter?: number } | undefined = httpOfError(error);
      if (!known) {
        logger.error({ err: error, request_id: requestId, method: ctx.method, path: ctx.path }, "request failed");
        ctx.status = serviceError.status;
        ctx.body = errorBody(serviceError.type, [{ message: "internal error" }], requestId);
        return;
      }
      const connectError = error as ConnectError;
      const violations = fieldViolationsOf(connectError);
      ctx.status = known.status;
      if (known.retryAfter) ctx.set("Retry-After", retryAfterOf(connectError) ?? String(known.retryAfter));
      ctx.body = errorBody(
        known.type,
        violations.length > 0
          ? violations.map((v) => ({ message: v.message, path: v.path }))
          : [{ message: connectError.rawMessage }],
        requestId,
      );
    }
  };
}

/**
 * What a client may read of an error written into a stream already under way
 * (the chat stream's `data: {"error": "..."}`): the service's message for a
 * code of the table, "internal error" for anything else.
 */
export function publicMessage(error: unknown): string {
  return error instanceof ConnectError && httpOf[error.code] ? error.rawMessage : "internal error";
}
