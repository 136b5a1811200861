import type { Client, Transport } from "@connectrpc/connect";
import { clientFor } from "@loom/server/transports";
import { AssistantsService } from "@loom/proto/assistants/v1/assistants_pb";
import { EventsService } from "@loom/proto/events/v1/events_pb";
import { BillingService } from "@loom/proto/identity/v1/billing_pb";
import { IdentityService } from "@loom/proto/identity/v1/identity_pb";
import { ChatService } from "@loom/proto/runs/v1/chat_pb";
import { RunsService } from "@loom/proto/runs/v1/runs_pb";
import { StorageService } from "@loom/proto/storage/v1/storage_pb";

/** The services the gateway talks to. */
export interface ServiceClients {
  identity: Client<typeof IdentityService>;
  /** Identity's second contract: billing belongs to who owns organizations. */
  billing: Client<typeof BillingService>;
  assistants: Client<typeof AssistantsService>;
  runs: Client<typeof RunsService>;
  /** Served by the runs service, which owns model access. */
  chat: Client<typeof ChatService>;
  events: Client<typeof EventsService>;
  storage: Client<typeof StorageService>;
}

/** One transport per service (process): billing is the identity service's, chat the runs service's. */
export type ServiceTransports = Record<Exclude<keyof ServiceClients, "billing" | "chat">, Transport>;

export function serviceClients(transports: ServiceTransports): ServiceClients {
  return {
    identity: clientFor(IdentityService, transports.identity),
    billing: clientFor(BillingService, transports.identity),
    assistants: clientFor(AssistantsService, transports.assistants),
    runs: clientFor(RunsService, transports.runs),
    chat: clientFor(ChatService, transports.runs),
    events: clientFor(EventsService, transports.events),
    storage: clientFor(StorageService, transports.storage),
  };
}

/** One transport for every service (the all-in-one process, tests). */
export function oneTransport(transport: Transport): ServiceTransports {
  return { identity: transport, assistants: transport, runs: transport, events: transport, storage: transport };
}
