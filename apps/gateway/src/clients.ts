import type { Client, Transport } from "@connectrpc/connect";
import { clientFor } from "@loom/server/transports";
import { type RpcDesc, type RpcName, rpcServices, type ServiceName, serviceNames } from "@loom/services/registry";

/**
 * The services the gateway talks to: a client of every Connect service of the
 * service registry, by its name there (`billing` is identity's, `chat` the
 * runs service's).
 */
export type ServiceClients = { [K in RpcName]: Client<RpcDesc<K>> };

/** One transport per service (process). */
export type ServiceTransports = Record<ServiceName, Transport>;

export function serviceClients(transports: ServiceTransports): ServiceClients {
  return Object.fromEntries(
    rpcServices.map(({ name, service, desc }) => [name, clientFor(desc, transports[service])]),
  ) as ServiceClients;
}

/** One transport for every service (the all-in-one process, tests). */
export function oneTransport(transport: Transport): ServiceTransports {
  return Object.fromEntries(serviceNames.map((name) => [name, transport])) as ServiceTransports;
}
