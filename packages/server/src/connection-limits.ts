import { readFileSync } from "node:fs";
import type { IncomingMessage, Server, ServerOptions } from "node:http";
import type { Logger } from "@loom/telemetry/logger";
import { Counter, metricsRegistry } from "@loom/telemetry/metrics";

/**
 * How long a connection may hold a descriptor without making progress, and
 * how many a listener holds at once (docs/decisions.md, "Connections").
 * Every HTTP server of Loom's takes these: the gateway's, the all-in-one's,
 * each service's.
 */
export interface ConnectionLimits {
  /** A request's headers must all arrive within this (ms) of its first byte, or of the connection. */
  headersTimeoutMs: number;
  /** A kept-alive connection with no request in flight is closed after this (ms). */
  keepAliveTimeoutMs: number;
  /** A request body that stops arriving for this long (ms) is cut; one that keeps coming may take any time. */
  bodyIdleTimeoutMs: number;
  /** Connections one listener holds at once; past it a new one is closed at once. Unset: from the descriptor limit. */
  maxConnections?: number | undefined;
}

export const defaultConnectionLimits: ConnectionLimits = {
  headersTimeoutMs: 60_000,
  keepAliveTimeoutMs: 5_000,
  bodyIdleTimeoutMs: 60_000,
};

/** The limits as the configuration spells them (runtime/config.ts `httpSettings`). */
export function connectionLimitsFrom(config: {
  HTTP_HEADERS_TIMEOUT_MS: number;
  HTTP_KEEP_ALIVE_TIMEOUT_MS: number;
  HTTP_BODY_IDLE_TIMEOUT_MS: number;
  HTTP_MAX_CONNECTIONS?: number | undefined;
}): ConnectionLimits {
  return {
    headersTimeoutMs: config.HTTP_HEADERS_TIMEOUT_MS,
    keepAliveTimeoutMs: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    bodyIdleTimeoutMs: config.HTTP_BODY_IDLE_TIMEOUT_MS,
    maxConnections: config.HTTP_MAX_CONNECTIONS,
  };
}

/**
 * The `createServer` options for `limits`. No limit on a whole request's
 * time (`requestTimeout: 0`: a 5 GiB upload on a slow link takes longer than
 * any fixed figure), but an explicit headers timeout: with `requestTimeout`
 * 0 Node's default headers timeout is 0 too, which held idle and slowloris
 * connections for ever. Node looks for late headers every
 * `connectionsCheckingInterval`; a quarter of the timeout keeps the real
 * limit within 1.25 times the configured one.
 */
export function connectionServerOptions(limits: ConnectionLimits): ServerOptions {
  return {
    requestTimeout: 0,
    headersTimeout: limits.headersTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.max(100, Math.min(30_000, Math.floor(limits.headersTimeoutMs / 4))),
  };
}

/** Connections a listener refused or cut, by why; see `limitConnections`. */
const connectionsDropped = new Counter({
  name: "loom_http_connections_dropped_total",
  help: "Connections a listener closed before serving them: max_connections (HTTP_MAX_CONNECTIONS reached), descriptors (the process was out of file descriptors), body_idle (a request body stopped arriving)",
  labelNames: ["reason"] as const,
  registers: [metricsRegistry],
});

/**
 * Applies what `connectionServerOptions` cannot: the cap on connections, the
 * body-idle timeout, and surviving an accept that fails. Call on a server
 * made with `connectionServerOptions(limits)`.
 *
 * - **The cap** keeps descriptors for what serving needs besides the client's
 *   socket (a blob's file, a database or upstream connection, SQLite's
 *   files): a crowd of idle connections is refused at the door, and the
 *   connections already in get their answers.
 * - **Body idle**: while a request's body is arriving, the socket's idle timer
 *   runs (reset by every byte); Node emits `timeout` on the request only
 *   while it is incomplete, and that cuts the connection. Once the body is
 *   in, the timer cuts nothing: when it fires, the response's listener stops
 *   it. An answer may take minutes to begin (a model's reply) or stream for
 *   hours (SSE), and neither is the client's stall. Requests without a body
 *   (GET, SSE) never start it.
 * - **Accept failures** (`EMFILE`, `ENFILE`: the process or the system is out
 *   of descriptors) reach the server as an `error` event, which with no
 *   listener would end the process: they are counted and logged (at most
 *   once a minute), and the listener goes on accepting once descriptors are free.
 */
export function limitConnections(server: Server, limits: ConnectionLimits, logger?: Logger): Server {
  const cap = limits.maxConnections ?? connectionsForDescriptorLimit(descriptorLimit());
  if (cap !== undefined) server.maxConnections = cap;
  let lastWarning = 0;
  const warn = (reason: "max_connections" | "descriptors", detail: string) => {
    connectionsDropped.inc({ reason });
    if (Date.now() - lastWarning < 60_000) return;
    lastWarning = Date.now();
    logger?.warn({ reason }, `refusing new connections: ${detail}; connections already open are still served`);
  };
  server.on("drop", () => warn("max_connections", `${cap} connections are open (HTTP_MAX_CONNECTIONS)`));
  server.on("error", (error: NodeJS.ErrnoException) => {
    // Only accept errors arrive here once the server listens (listen's own are handled by `listen`).
    if (server.listening)
      warn("descriptors", `the process is out of file descriptors (${error.code ?? error.message})`);
  });
  server.on("request", (req, res) => {
    if (req.complete || !hasBody(req)) return;
    req.setTimeout(limits.bodyIdleTimeoutMs, () => {
      connectionsDropped.inc({ reason: "body_idle" });
      req.socket.destroy();
    });
    // Fired only once the body is in (else the request's listener above ends it first): the answer's time is not limited here.
    res.once("timeout", () => res.socket?.setTimeout(0));
  });
  return server;
}

function hasBody(req: IncomingMessage): boolean {
  return (
    req.headers["transfer-encoding"] !== undefined ||
    (req.headers["content-length"] !== undefined && req.headers["content-length"] !== "0")
  );
}

/** Descriptors kept back from client connections: a quarter of the limit, at least 64. */
export function connectionsForDescriptorLimit(limit: number | undefined): number | undefined {
  if (limit === undefined) return undefined;
  return Math.max(16, limit - Math.max(64, Math.floor(limit / 4)));
}

/** The process's soft limit on open files (Linux: /proc/self/limits); undefined when unknown or unlimited. */
export function descriptorLimit(): number | undefined {
  try {
    const line = /^Max open files\s+(\S+)/m.exec(readFileSync("/proc/self/limits", "utf8"))?.[1];
    const limit = Number(line);
    return Number.isSafeInteger(limit) && limit > 0 ? limit : undefined;
  } catch {
    return undefined;
  }
}
