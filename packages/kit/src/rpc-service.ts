import type { ConnectRouter } from "@connectrpc/connect";

/**
 * One service as the process that hosts it sees it: its RPC routes, whether
 * its dependencies answer, and how to let go of them. Built by each app's
 * `createXService(deps)` so the same object runs standalone (main.ts), in the
 * all-in-one process, and in tests.
 */
export interface RpcService {
  name: string;
  routes(router: ConnectRouter): void;
  ready(): Promise<boolean>;
  close(): Promise<void>;
}

/** A service whose readiness and shutdown are its store's: ready while the store answers, closing it on close. */
export function storeBackedService(name: string, routes: RpcService["routes"], store: { ready(): Promise<boolean>; close(): Promise<void> }): RpcService {
  return { name, routes, ready: () => store.ready(), close: () => store.close() };
}
