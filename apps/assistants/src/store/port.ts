import type { IdArray } from "@loom/contracts/id-arrays";
import type { Page } from "@loom/contracts/paging";
import type { StoreLifecycle } from "@loom/store/open";
import type { RulesetStore } from "./rulesets.ts";

export interface AssistantRecord extends Record<IdArray, string[]> {
  id: string;
  organizationId: string;
  name: string;
  description: string;
  input?: string;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
}

/** Fields an update may set; absent ones stay as they are. */
export type AssistantPatch = Partial<
  Pick<AssistantRecord, "name" | "description" | "input" | Exclude<IdArray, "retrieverIds">>
>;

/**
 * The assistants service's whole store: its assistants and, in the same
 * database, the rulesets and rules they name (the `RulesetStore` part).
 * Every read and write is scoped to one organization: another's do not exist.
 */
export interface AssistantsStore extends StoreLifecycle, RulesetStore {
  insert(assistant: AssistantRecord): Promise<void>;
  get(organizationId: string, id: string): Promise<AssistantRecord | undefined>;
  update(organizationId: string, id: string, patch: AssistantPatch, at: Date): Promise<AssistantRecord | undefined>;
  delete(organizationId: string, id: string): Promise<boolean>;
  /** Newest first by created_at, ties by id. */
  list(organizationId: string, skip: number, limit: number): Promise<Page<AssistantRecord>>;
  /** Ids of the organization's assistants whose `rulesetIds` hold `rulesetId`, at most `limit`. */
  namingRuleset(organizationId: string, rulesetId: string, limit: number): Promise<string[]>;
}
