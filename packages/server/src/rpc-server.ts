import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type Bus, busReadiness } from "@loom/bus/bus";
import type { Logger } from "@loom/telemetry/logger";
import { connectRequestHandler } from "./connect-request-handler.ts";
import {
  type ConnectionLimits,
  connectionServerOptions,
  defaultConnectionLimits,
  limitConnections,
} from "./connection-limits.ts";
import { heldUntil } from "./held-until.ts";
import { listenRefusal } from "./listen-refusal.ts";
import type { RpcService } from "./rpc-service.ts";
import { serverInterceptors } from "./transports.ts";

export interface RpcServerOptions {
  services: RpcService[];
  serviceToken: string;
  logger: Logger;
  port?: number;
  host?: string;
  /** The process's bus: `/readyz` says whether NATS is connected (it never makes the process unready). */
  bus?: Bus;
  /** Timeouts and the connection cap (connection-limits.ts); unset: the defaults. */
  connections?: ConnectionLimits;
  /** Requests wait for it (`heldUntil`): the end of the process's start. */
  started?: Promise<void>;
}

export interface RunningServer {
  url: string;
  port: number;
  server: Server;
  /** Stops accepting, finishes in-flight requests, then closes the services. */
  close(): Promise<void>;
}

/**
 * Serves services over Connect (HTTP/1.1; Connect, gRPC and gRPC-web
 * protocols), plus `/healthz` (the process answers) and `/readyz` (every
 * service's dependencies answer; the body also says `bus: disconnected`
 * while NATS is lost, which degrades but does not stop the process), plus the plain HTTP routes of services
 * that have some (`RpcService.http`), matched by path prefix.
 */
export async function startRpcServer(options: RpcServerOptions): Promise<RunningServer> {
  const { services, logger } = options;
  const rpc = connectRequestHandler({
    routes: (router) => services.forEach((s) => s.routes(router)),
    interceptors: serverInterceptors(options.serviceToken, logger),
  });
  const plainRoutes = services.flatMap((s) => (s.http ? [s.http] : []));
  // Plain routes may take uploads of any length (blobs): the limits are on stalls, as in createHttpServer.
  const limits = options.connections ?? defaultConnectionLimits;
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const plainRoute = plainRoutes.find((routes) => req.url?.startsWith(routes.prefix));
    if (plainRoute) return plainRoute.handle(req, res);
    if (req.url === "/healthz") return plain(res, 200, "ok");
    if (req.url === "/readyz") {
      const { bus } = busReadiness(options.bus);
      void allReady(services).then((ok) =>
        plain(res, ok ? 200 : 503, `${ok ? "ready" : "not ready"}${bus ? `; bus ${bus}` : ""}`),
      );
      return;
    }
    rpc(req, res);
  };
  const server = createServer(
    connectionServerOptions(limits),
    options.started ? heldUntil(options.started, handle) : handle,
  );
  limitConnections(server, limits, logger);
  return listen(server, options.port ?? 0, options.host ?? "127.0.0.1", async () => {
    await Promise.all(services.map((s) => s.close()));
  });
}

export async function allReady(services: RpcService[]): Promise<boolean> {
  const answers = await Promise.all(services.map((s) => s.ready().catch(() => false)));
  return answers.every(Boolean);
}

function plain(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { "content-type": "text/plain" }).end(body);
}

/**
 * How long a closing server lets requests in flight finish before it cuts the
 * connections still open: long-lived streams (SSE, FollowEvents) would
 * otherwise hold a shutdown until the process's grace runs out. A client of a
 * cut stream resumes from its last event id.
 */
export const drainMs = 5_000;

/** Connections waiting to be accepted, at most. */
export const listenBacklog = 4096;

/**
 * Listens, and returns a handle whose close drains connections first. A port
 * that cannot be had is refused naming `setting`, the variable that chose it.
 */
export async function listen(
  server: Server,
  port: number,
  host: string,
  afterClose: () => Promise<void> = async () => {},
  setting = "PORT",
): Promise<RunningServer> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error) => reject(listenRefusal(error, { port, host, setting })));
    // A long accept queue: a crowd connecting at once (thousands of SSE streams
    // after a run ends) would overflow Node's default of 511, and each dropped
    // SYN is retried by the client only after 1 s, then 3 s (docs/decisions.md,
    // "SSE streams"). The kernel caps it at net.core.somaxconn.
    server.listen({ port, host, backlog: listenBacklog }, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${shownHost}:${address.port}`,
    port: address.port,
    server,
    close: () =>
      (closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
          setTimeout(() => server.closeAllConnections(), drainMs).unref();
        });
        await afterClose();
      })()),
  };
}
