import type { IncomingMessage, ServerResponse } from "node:http";
import type { ConnectRouter } from "@connectrpc/connect";

/**
 * Plain HTTP a service serves beside its RPCs, on the same port: every
 * request whose path starts with `prefix` (the storage service's blob data
 * plane, `/blobs/`). The handler answers on its own, errors included.
 */
export interface PlainHttpRoutes {
  prefix: string;
  handle(req: IncomingMessage, res: ServerResponse): void;
}

/**
 * One service as the process that hosts it sees it: its RPC routes, whether
 * its dependencies answer, and how to let go of them. Built by each app's
 * `createXService(deps)` so the same object runs standalone (main.ts), in the
 * all-in-one process, and in tests.
 */
export interface RpcService {
  name: string;
  routes(router: ConnectRouter): void;
  /** Plain HTTP routes under a path prefix, when the service has any. */
  http?: PlainHttpRoutes;
  ready(): Promise<boolean>;
  close(): Promise<void>;
  /**
   * Runs once the process hosting it has started everything that can fail at
   * start (its listeners included): for what must not happen in a start that
   * then fails (identity's bootstrap, whose key is printed once).
   */
  started?(): Promise<void>;
}

/** A service whose readiness and shutdown are its store's: ready while the store answers, closing it on close. */
export function storeBackedService(
  name: string,
  routes: RpcService["routes"],
  store: { ready(): Promise<boolean>; close(): Promise<void> },
): RpcService {
  return { name, routes, ready: () => store.ready(), close: () => store.close() };
}
