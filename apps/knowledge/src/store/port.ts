import type { Page } from "@loom/contracts/paging";
import type { StoreLifecycle } from "@loom/store/open";
import type { DataConnectorStore } from "./data-connectors.ts";
import type { KnowledgeBaseJobStore } from "./jobs.ts";
import type { KnowledgeBaseQueryStore } from "./queries.ts";

export interface KnowledgeBaseRecord {
  id: string;
  organizationId: string;
  name: string;
  description: string;
  /** `provider:model`, one of EMBEDDING_MODELS when it was set; "" for none (keyword search only). */
  embeddingModel: string;
  /** `<bucket_id>/<asset name>`, `<bucket_id>/<folder>/` or `<bucket_id>/`, in the order given. */
  assetPaths: string[];
  /** Data connectors of the organization, in the order given. */
  dataConnectorIds: string[];
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
}

/** Fields an update may set; absent ones stay as they are. */
export type KnowledgeBasePatch = Partial<
  Pick<KnowledgeBaseRecord, "name" | "description" | "embeddingModel" | "assetPaths" | "dataConnectorIds">
>;

/**
 * The knowledge service's store: its knowledge bases and, in the same
 * database, the data connectors they name (the `DataConnectorStore` part), their ingest jobs
 * (the `KnowledgeBaseJobStore` part) and their kept queries (the `KnowledgeBaseQueryStore` part).
 * Every read and write is scoped to one organization: another's do not exist.
 */
export interface KnowledgeBasesStore
  extends StoreLifecycle,
    DataConnectorStore,
    KnowledgeBaseJobStore,
    KnowledgeBaseQueryStore {
  insert(knowledgeBase: KnowledgeBaseRecord): Promise<void>;
  get(organizationId: string, id: string): Promise<KnowledgeBaseRecord | undefined>;
  update(
    organizationId: string,
    id: string,
    patch: KnowledgeBasePatch,
    at: Date,
  ): Promise<KnowledgeBaseRecord | undefined>;
  delete(organizationId: string, id: string): Promise<boolean>;
  /** The organization's knowledge bases among `ids` (lower-case uuids), in no particular order. */
  getMany(organizationId: string, ids: readonly string[]): Promise<KnowledgeBaseRecord[]>;
  /** Newest first by created_at, ties by id. */
  list(organizationId: string, skip: number, limit: number): Promise<Page<KnowledgeBaseRecord>>;
}
