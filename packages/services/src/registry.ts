import type { DescService } from "@bufbuild/protobuf";
import { AssistantsService } from "@loom/proto/assistants/v1/assistants_pb";
import { RulesetsService } from "@loom/proto/assistants/v1/rulesets_pb";
import { EventsService } from "@loom/proto/events/v1/events_pb";
import { BillingService } from "@loom/proto/identity/v1/billing_pb";
import { IdentityService } from "@loom/proto/identity/v1/identity_pb";
import { DataConnectorsService } from "@loom/proto/knowledge/v1/data_connectors_pb";
import { KnowledgeBaseJobsService } from "@loom/proto/knowledge/v1/knowledge_base_jobs_pb";
import { KnowledgeBaseQueriesService } from "@loom/proto/knowledge/v1/knowledge_base_queries_pb";
import { KnowledgeBasesService } from "@loom/proto/knowledge/v1/knowledge_bases_pb";
import { ChatService } from "@loom/proto/runs/v1/chat_pb";
import { RunsService } from "@loom/proto/runs/v1/runs_pb";
import { StorageService } from "@loom/proto/storage/v1/storage_pb";
import { ActivitiesService } from "@loom/proto/tools/v1/activities_pb";
import { SecretsService } from "@loom/proto/tools/v1/secrets_pb";
import { ToolsService } from "@loom/proto/tools/v1/tools_pb";

/**
 * One service of Loom: a process of its own in the split deployment
 * (`apps/<name>/src/main.ts`, one Deployment in Kubernetes), a part of the
 * all-in-one process. Data only: who runs a service loads its code itself.
 */
export interface ServiceEntry {
  /** The Connect services it serves, by the name the gateway's client of each goes by. */
  rpc: Readonly<Record<string, DescService>>;
  /** The variable that holds its base URL in the processes that call it (the gateway, its peers). */
  urlVariable: string;
  /** Its PORT when it runs on its own (the Kubernetes manifests use the same). */
  port: number;
  /** Its MONGODB_DB when it runs on its own; the all-in-one names it MONGODB_DB_PREFIX + its name. */
  database: string;
  /** What it keeps, for the warning that it keeps them in memory when MONGODB_URL is unset. */
  keeps: string;
  /** Set when it uses the bus: what is lost without NATS_URL (its warning at start). */
  withoutNats?: string;
  /** The services it calls at run time: it reads their URL variables. */
  calls: readonly string[];
  /** It serves the blob data plane (`/blobs/...`) beside its RPCs: the gateway forwards signed URLs there. */
  servesBlobs?: boolean;
}

/**
 * Every service, in the order the gateway lists them (`/readyz`). Adding a
 * service starts here (ARCHITECTURE.md, "Adding a service").
 */
export const services = {
  identity: {
    // Billing is identity's: it owns organizations. One service, two contracts.
    rpc: { identity: IdentityService, billing: BillingService },
    urlVariable: "IDENTITY_URL",
    port: 8081,
    database: "loom_identity",
    keeps: "identities",
    withoutNats: "gateways cannot hear of revoked keys, so they do not cache who a credential is",
    calls: [],
  },
  assistants: {
    // Rulesets live beside the assistants that name them. One service, two contracts.
    rpc: { assistants: AssistantsService, rulesets: RulesetsService },
    urlVariable: "ASSISTANTS_URL",
    port: 8082,
    database: "loom_assistants",
    keeps: "assistants, rulesets and rules",
    // Knowledge and tools: an assistant's knowledge_base_ids and tool_ids must name knowledge bases and tools of its
    // organization (ResolveKnowledgeBases, ResolveTools).
    calls: ["knowledge", "tools"],
  },
  runs: {
    // Chat is served by the runs service, which owns model access.
    rpc: { runs: RunsService, chat: ChatService },
    urlVariable: "RUNS_URL",
    port: 8083,
    database: "loom_runs",
    keeps: "runs",
    withoutNats: "cancel reaches only this replica's worker",
    // Tools: a run's agent loop lists and calls its tools' activities (ActivitiesService).
    // Knowledge: a run's knowledge_base_ids must name knowledge bases of its organization (ResolveKnowledgeBases).
    calls: ["assistants", "events", "tools", "knowledge"],
  },
  events: {
    rpc: { events: EventsService },
    urlVariable: "EVENTS_URL",
    port: 8084,
    database: "loom_events",
    keeps: "events",
    withoutNats: "live events reach followers of this process only",
    calls: [],
  },
  storage: {
    rpc: { storage: StorageService },
    urlVariable: "STORAGE_URL",
    port: 8085,
    database: "loom_storage",
    keeps: "buckets and assets",
    calls: [],
    servesBlobs: true,
  },
  tools: {
    // Secrets and calling a tool's server live beside the tools that name them. One service, three contracts.
    rpc: { tools: ToolsService, secrets: SecretsService, activities: ActivitiesService },
    urlVariable: "TOOLS_URL",
    port: 8086,
    database: "loom_tools",
    keeps: "tools, their secrets and tool runs",
    calls: [],
  },
  knowledge: {
    // Data connectors, ingest jobs and queries live beside the knowledge bases they serve. One service, four contracts.
    rpc: {
      knowledgeBases: KnowledgeBasesService,
      dataConnectors: DataConnectorsService,
      knowledgeBaseJobs: KnowledgeBaseJobsService,
      knowledgeBaseQueries: KnowledgeBaseQueriesService,
    },
    urlVariable: "KNOWLEDGE_URL",
    port: 8087,
    database: "loom_knowledge",
    keeps: "knowledge bases, data connectors, ingest jobs and the chunk index",
    // Storage: the buckets a knowledge base names must be the organization's (GetBucket); ingest lists and reads
    // their assets (ListAssets, CreateAssetUrl).
    calls: ["storage"],
  },
} as const satisfies Record<string, ServiceEntry>;

export type ServiceName = keyof typeof services;

/** Every service's name, in the table's order. */
export const serviceNames = Object.keys(services) as ServiceName[];

/** The gateway: not a service (it serves no RPCs), the one process every client calls. */
export const gateway = { name: "gateway", port: 8080 } as const;

/** Every app the image runs on its own (`APP`): the services and the gateway; `loom` is the all-in-one. */
export const splitApps = [...serviceNames, gateway.name] as const;
export type SplitApp = (typeof splitApps)[number];

/** A service's entry, typed loosely (for loops over the table). */
export const entryOf = (name: ServiceName): ServiceEntry => services[name];

/** The services a service calls, checked: each is a service of the table. */
export const callsOf = (name: ServiceName): ServiceName[] =>
  entryOf(name).calls.map((callee) => (callee in services ? (callee as ServiceName) : unknownService(name, callee)));

/** The services in an order where each comes after those it calls (to start them one by one). */
export function callersLast(): ServiceName[] {
  const order: ServiceName[] = [];
  const visit = (name: ServiceName) => {
    if (order.includes(name)) return;
    callsOf(name).forEach(visit);
    order.push(name);
  };
  serviceNames.forEach(visit);
  return order;
}

/** The service that serves the blob data plane. */
export function blobService(): ServiceName {
  const found = serviceNames.find((name) => entryOf(name).servesBlobs);
  if (!found) throw new Error("no service in the registry serves blobs");
  return found;
}

function unknownService(caller: string, callee: string): never {
  throw new Error(`${caller} calls ${callee}, which is not in the service registry`);
}

/** Every Connect service of the table, by its client name: the gateway's clients. */
type Rpcs = (typeof services)[ServiceName]["rpc"];
type KeysOf<T> = T extends unknown ? keyof T : never;
type DescOf<T, K extends PropertyKey> = T extends Record<K, infer D> ? D : never;
export type RpcName = KeysOf<Rpcs>;
export type RpcDesc<K extends RpcName> = DescOf<Rpcs, K>;

/** Each Connect service with the service that serves it. */
export const rpcServices = serviceNames.flatMap((service) =>
  Object.entries(entryOf(service).rpc).map(([name, desc]) => ({ name: name as RpcName, service, desc })),
);
