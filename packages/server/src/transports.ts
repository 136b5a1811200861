import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import type { Logger } from "@loom/telemetry/logger";
import { observeCalls } from "@loom/telemetry/rpc-metrics";
import { traceIncomingCalls, traceOutgoingCalls } from "@loom/telemetry/rpc-tracing";
import { tracing } from "@loom/telemetry/tracing";
import { directTransport } from "./in-process-transport.ts";
import { logCalls, nameUnreachableService, sanitizeErrors, sendServiceToken, trustGateway } from "./interceptors.ts";
import type { RpcService } from "./rpc-service.ts";
import { serviceTransport } from "./service-transport.ts";

/**
 * The interceptors every service runs, in order, wherever it is hosted. The
 * call's span and its metrics come first, so they see the code the caller
 * gets; with tracing off there is no span (not even a no-op one on the hot path).
 */
export function serverInterceptors(serviceToken: string, logger: Logger): Interceptor[] {
  return [
    ...(tracing().enabled ? [traceIncomingCalls()] : []),
    observeCalls(),
    logCalls(logger),
    sanitizeErrors(logger),
    trustGateway(serviceToken),
  ];
}

/** Binary Connect over HTTP/1.1 keep-alive connections to a service's base URL. */
export function httpTransport(baseUrl: string, serviceToken: string): Transport {
  return serviceTransport(baseUrl, [
    ...(tracing().enabled ? [traceOutgoingCalls()] : []),
    nameUnreachableService(),
    sendServiceToken(serviceToken),
  ]);
}

/**
 * Calls services hosted in this same process through the same server
 * interceptors as over HTTP, minus the network and the serializing: what the
 * all-in-one process uses.
 */
export function inProcessTransport(services: RpcService[], serviceToken: string, logger: Logger): Transport {
  return directTransport(services, serviceToken, serverInterceptors(serviceToken, logger));
}

export function clientFor<S extends DescService>(service: S, transport: Transport): Client<S> {
  return createClient(service, transport);
}
