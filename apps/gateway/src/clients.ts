import type { Client, Transport } from "@connectrpc/connect";
import { clientFor } from "@loom/kit/transports";
import { IdentityService } from "@loom/proto/identity/v1/identity_pb";

/** The services the gateway talks to. */
export interface ServiceClients {
  identity: Client<typeof IdentityService>;
}

export interface ServiceTransports {
  identity: Transport;
}

export function serviceClients(transports: ServiceTransports): ServiceClients {
  return { identity: clientFor(IdentityService, transports.identity) };
}
