import type { Page } from "@loom/contracts/paging";
import type { StoreLifecycle } from "@loom/store/open";

export interface KnowledgeBaseRecord {
  id: string;
  organizationId: string;
  name: string;
  description: string;
  /** `provider:model`, one of EMBEDDING_MODELS when it was set; "" for none (keyword search only). */
  embeddingModel: string;
  /** `<bucket_id>/<asset name>`, `<bucket_id>/<folder>/` or `<bucket_id>/`, in the order given. */
  assetPaths: string[];
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
}

/** Fields an update may set; absent ones stay as they are. */
export type KnowledgeBasePatch = Partial<
  Pick<KnowledgeBaseRecord, "name" | "description" | "embeddingModel" | "assetPaths">
>;

/**
 * The knowledge service's knowledge bases. Every read and write is scoped to
 * one organization: another's knowledge bases do not exist.
 */
export interface KnowledgeBasesStore extends StoreLifecycle {
  insert(knowledgeBase: KnowledgeBaseRecord): Promise<void>;
  get(organizationId: string, id: string): Promise<KnowledgeBaseRecord | undefined>;
  update(
    organizationId: string,
    id: string,
    patch: KnowledgeBasePatch,
    at: Date,
  ): Promise<KnowledgeBaseRecord | undefined>;
  delete(organizationId: string, id: string): Promise<boolean>;
  /** Newest first by created_at, ties by id. */
  list(organizationId: string, skip: number, limit: number): Promise<Page<KnowledgeBaseRecord>>;
}
