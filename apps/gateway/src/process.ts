import { remoteBlobs } from "@loom/blob-plane/http";
import { type Bus, busReadiness } from "@loom/bus/bus";
import { httpTransport } from "@loom/server/transports";
import { blobService, serviceNames } from "@loom/services/registry";
import { serviceUrls } from "@loom/services/settings";
import type { Logger } from "@loom/telemetry/logger";
import type { z } from "zod";
import { buildApp } from "./app.ts";
import { type ServiceTransports, serviceClients } from "./clients.ts";
import type { gatewayConfigSchema } from "./config.ts";
import { servicesStatus } from "./readiness.ts";

export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;

/**
 * The gateway run on its own, from its settings: clients of every service of
 * the registry at its URL variable, the blob paths forwarded to the service
 * that serves blobs, and a `/readyz` that reports them all. Used by main.ts
 * and by the test stack (which hands each replica its bus).
 */
export function buildGateway(config: GatewayConfig, deps: { logger: Logger; bus?: Bus | undefined }) {
  const urls = serviceUrls(serviceNames, config);
  const transports = Object.fromEntries(
    serviceNames.map((name) => [name, httpTransport(urls[name], config.SERVICE_TOKEN)]),
  ) as ServiceTransports;
  // Signed blob URLs point at the gateway; their bytes stream on to the service that keeps them.
  const blobs = remoteBlobs(urls[blobService()], config.SERVICE_TOKEN);
  // A service that is down makes its own requests 503, and a lost NATS delays revocations; neither takes the gateway replicas out of rotation.
  const readiness = async () => ({ ready: true, services: await servicesStatus(urls), ...busReadiness(deps.bus) });
  return buildApp({
    clients: serviceClients(transports),
    blobs,
    logger: deps.logger,
    bus: deps.bus,
    limits: config,
    billingRequired: config.BILLING_REQUIRED,
    consoleConnectOrigins: config.CONSOLE_CONNECT_ORIGINS,
    readiness,
  });
}
