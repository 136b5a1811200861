import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createRouterTransport } from "@connectrpc/connect";
import { createLogger } from "@loom/telemetry/logger";
import { buildApp, type GatewayDeps } from "../src/app.ts";
import { oneTransport, serviceClients } from "../src/clients.ts";
import { noBlobs } from "./no-blobs.ts";

/** The gateway with no service behind it: for what it answers itself (the OpenAPI document, /docs, /console). */
export const appWithoutServices = (deps: Partial<GatewayDeps> = {}) =>
  buildApp({
    clients: serviceClients(oneTransport(createRouterTransport(() => {}))),
    blobs: noBlobs,
    logger: createLogger("test", "silent"),
    readiness: async () => ({ ready: true }),
    ...deps,
  });

/** That gateway listening on a port of 127.0.0.1: its base URL, and how to stop it. */
export async function serveWithoutServices(
  deps: Partial<GatewayDeps> = {},
): Promise<{ base: string; close: () => Promise<void> }> {
  const server = createServer(appWithoutServices(deps).app.callback());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
