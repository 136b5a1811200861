import { type Pagination, pageQuery, request, segment } from "../api/request.ts";

export interface Ruleset {
  ruleset_id: string;
  name: string;
  alias: string | null;
  description: string;
  rule_ids: string[];
  created_at: string;
}

/** A rule: an instruction in words, or a JSON schema the answer must follow. */
export interface Rule {
  rule_id: string;
  name: string;
  rule: string | Record<string, unknown>;
  created_at: string;
}

export type RulesetPage = { rulesets: Ruleset[]; pagination: Pagination };

export const listRulesets = (key: string, page: number, pageSize: number) =>
  request<RulesetPage>(key, "GET", `/rulesets?${pageQuery(page, pageSize)}`);

export const getRuleset = (key: string, rulesetId: string) =>
  request<Ruleset>(key, "GET", `/rulesets/${segment(rulesetId)}`);

export const createRuleset = (key: string, fields: { name: string; alias?: string; description?: string }) =>
  request<Ruleset>(key, "POST", "/rulesets", fields);

/** Changes the fields sent: `rule_ids` sent replaces the ruleset's rules and their order. */
export const updateRuleset = (
  key: string,
  rulesetId: string,
  fields: { name?: string; alias?: string; description?: string; rule_ids?: string[] },
) => request<Ruleset>(key, "PATCH", `/rulesets/${segment(rulesetId)}`, fields);

export const deleteRuleset = (key: string, rulesetId: string) =>
  request<undefined>(key, "DELETE", `/rulesets/${segment(rulesetId)}`);

/** A ruleset's rules in its order, all at once: without `page_size` the API answers the whole ruleset (at most 100). */
export const listRulesetRules = (key: string, rulesetId: string) =>
  request<{ rules: Rule[] }>(key, "GET", `/rules?ruleset_id=${segment(rulesetId)}`);

export const createRule = (key: string, fields: { name: string; rule: Rule["rule"] }) =>
  request<Rule>(key, "POST", "/rules", fields);

export const updateRule = (key: string, ruleId: string, fields: { name?: string; rule?: Rule["rule"] }) =>
  request<Rule>(key, "PATCH", `/rules/${segment(ruleId)}`, fields);

/** Deletes a rule; the API takes it out of every ruleset that lists it. */
export const deleteRule = (key: string, ruleId: string) =>
  request<undefined>(key, "DELETE", `/rules/${segment(ruleId)}`);
