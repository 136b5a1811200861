import type { JsonObject } from "@bufbuild/protobuf";
import type { Page } from "@loom/contracts/paging";

export interface RulesetRecord {
  id: string;
  organizationId: string;
  name: string;
  alias?: string;
  description: string;
  metadata: JsonObject;
  /** Ids of the organization's rules, without duplicates, in the order they reach the model. */
  ruleIds: string[];
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
}

export interface RuleRecord {
  id: string;
  organizationId: string;
  name: string;
  /** An instruction, or a JSON schema the answer must follow (griptape's JsonSchemaRule). */
  rule: string | JsonObject;
  metadata: JsonObject;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
}

/** Fields an update may set; absent ones stay as they are. */
export type RulesetPatch = Partial<Pick<RulesetRecord, "name" | "alias" | "description" | "metadata" | "ruleIds">>;
export type RulePatch = Partial<Pick<RuleRecord, "name" | "rule" | "metadata">>;

/**
 * Rulesets and rules, kept by the assistants service beside its assistants.
 * Every read and write is scoped to one organization: another's do not exist.
 */
export interface RulesetStore {
  insertRuleset(ruleset: RulesetRecord): Promise<void>;
  getRuleset(organizationId: string, id: string): Promise<RulesetRecord | undefined>;
  /** The organization's rulesets among `ids`, in no particular order; ids of none are left out. */
  getRulesets(organizationId: string, ids: readonly string[]): Promise<RulesetRecord[]>;
  updateRuleset(organizationId: string, id: string, patch: RulesetPatch, at: Date): Promise<RulesetRecord | undefined>;
  /** Removes `ruleIds` from a ruleset's list (rules deleted while it was written); the ruleset as it is then. */
  dropRuleIds(
    organizationId: string,
    id: string,
    ruleIds: readonly string[],
    at: Date,
  ): Promise<RulesetRecord | undefined>;
  deleteRuleset(organizationId: string, id: string): Promise<boolean>;
  /** Newest first by created_at, ties by id; only those with `alias` when given. */
  listRulesets(
    organizationId: string,
    alias: string | undefined,
    skip: number,
    limit: number,
  ): Promise<Page<RulesetRecord>>;

  insertRule(rule: RuleRecord): Promise<void>;
  getRule(organizationId: string, id: string): Promise<RuleRecord | undefined>;
  /** The organization's rules among `ids`, in no particular order; ids of none are left out. */
  getRules(organizationId: string, ids: readonly string[]): Promise<RuleRecord[]>;
  updateRule(organizationId: string, id: string, patch: RulePatch, at: Date): Promise<RuleRecord | undefined>;
  /**
   * Deletes a rule, then removes its id from the `rule_ids` of every ruleset
   * of the organization that lists it (their `updatedAt` set to `at`).
   */
  deleteRule(organizationId: string, id: string, at: Date): Promise<boolean>;
  /** Newest first by created_at, ties by id. */
  listRules(organizationId: string, skip: number, limit: number): Promise<Page<RuleRecord>>;
}
