import { timingSafeEqual } from "node:crypto";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { isDependencyDown } from "@loom/runtime/dependency-down";
import type { Logger } from "@loom/telemetry/logger";
import { principalHeaders, principalKey } from "./principal.ts";

/**
 * Lets deliberate errors through and replaces everything else with a
 * sanitized one: callers never see driver messages or stacks; the log does.
 */
export function sanitizeErrors(logger: Logger): Interceptor {
  const sanitized = (error: unknown, procedure: string): unknown => {
    if (error instanceof ConnectError && error.code !== Code.Internal && error.code !== Code.Unknown) return error;
    if (isDependencyDown(error)) {
      logger.warn({ err: error, procedure }, "dependency unavailable");
      return new ConnectError("a dependency is unavailable, try again later", Code.Unavailable);
    }
    logger.error({ err: error, procedure }, "unexpected error");
    return new ConnectError("internal error", Code.Internal);
  };
  // A stream's errors come while it is read, after the call has answered: its messages pass through here too.
  async function* sanitizedStream<T>(messages: AsyncIterable<T>, procedure: string): AsyncIterable<T> {
    try {
      yield* messages;
    } catch (error) {
      throw sanitized(error, procedure);
    }
  }
  return (next) => async (req) => {
    try {
      const res = await next(req);
      return res.stream ? { ...res, message: sanitizedStream(res.message, req.method.name) } : res;
    } catch (error) {
      throw sanitized(error, req.method.name);
    }
  };
}

/**
 * Client side: a call that never got an answer from its service (connection
 * refused or reset, the host unresolvable or unreachable) fails as
 * UNAVAILABLE saying which service is down — named by its contract's
 * package, `loom.runs.v1.ChatService` is the runs service — never where it
 * lives: the socket error's message carries the address
 * (`connect ECONNREFUSED 10.0.0.7:8083`), and errors travel on to the public
 * answer as they are. What the service itself answered passes through.
 */
export function nameUnreachableService(): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (error) {
      // The caller's own abort or deadline is not the service's fault.
      if (error instanceof ConnectError && (error.code === Code.Canceled || error.code === Code.DeadlineExceeded))
        throw error;
      if (!isDependencyDown(error)) throw error;
      const service = req.service.typeName.split(".")[1] ?? req.service.name;
      throw new ConnectError(
        `the ${service} service is unavailable, try again later`,
        Code.Unavailable,
        undefined,
        undefined,
        error,
      );
    }
  };
}

/** Debug-level access log of every RPC with its outcome and duration. */
export function logCalls(logger: Logger): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    try {
      const res = await next(req);
      logger.debug({ procedure: req.method.name, ms: performance.now() - started }, "rpc ok");
      return res;
    } catch (error) {
      const code = error instanceof ConnectError ? Code[error.code] : "Unknown";
      logger.debug({ procedure: req.method.name, code, ms: performance.now() - started }, "rpc failed");
      throw error;
    }
  };
}

/**
 * Server side of the trust model: every RPC must carry the shared service
 * token; the principal headers are read only then.
 */
export function trustGateway(serviceToken: string): Interceptor {
  const expected = Buffer.from(serviceToken);
  return (next) => async (req) => {
    const given = Buffer.from(req.header.get(principalHeaders.serviceToken) ?? "");
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new ConnectError("missing or wrong service token", Code.Unauthenticated);
    }
    const userId = req.header.get(principalHeaders.userId);
    const organizationId = req.header.get(principalHeaders.organizationId);
    if (userId && organizationId) req.contextValues.set(principalKey, { userId, organizationId });
    return next(req);
  };
}

/** Client side of the trust model: stamps the service token on every call. */
export function sendServiceToken(serviceToken: string): Interceptor {
  return (next) => (req) => {
    req.header.set(principalHeaders.serviceToken, serviceToken);
    return next(req);
  };
}
