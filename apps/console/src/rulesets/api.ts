import { type Pagination, pageQuery, request } from "../api/request.ts";

export interface Ruleset {
  ruleset_id: string;
  name: string;
  alias: string | null;
  description: string;
  rule_ids: string[];
  created_at: string;
}

export type RulesetPage = { rulesets: Ruleset[]; pagination: Pagination };

export const listRulesets = (key: string, page: number, pageSize: number) =>
  request<RulesetPage>(key, "GET", `/rulesets?${pageQuery(page, pageSize)}`);
