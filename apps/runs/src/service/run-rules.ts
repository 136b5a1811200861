import type { JsonObject } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { invalidArgument } from "@loom/contracts/errors";
import { valueToJson } from "@loom/contracts/json-value";
import type { Rule, RulesetsService } from "@loom/proto/assistants/v1/rulesets_pb";
import { headersFor, type Principal } from "@loom/server/principal";
import { type RunRules, runRules } from "../rules/instructions.ts";
import { firstPathOf, type IdSource } from "./id-sources.ts";

/** A list a run's ruleset ids came from, by its public field (`body.ruleset_ids`, `assistant.ruleset_ids`, …). */
export type RulesetIdSource = IdSource;

/**
 * The rules of a run's rulesets, read as the caller when the run is created
 * (docs/behaviour.md §5): the assistants service answers the organization's
 * rulesets in the order asked. An id that names no ruleset of the
 * organization is INVALID_ARGUMENT naming the field it came from, `sources`
 * in order (the first list holding the id names it). No ruleset, no call.
 */
export async function readRunRules(
  rulesets: Client<typeof RulesetsService>,
  principal: Principal,
  rulesetIds: string[],
  sources: RulesetIdSource[],
): Promise<RunRules> {
  if (rulesetIds.length === 0) return {};
  const resolved = await rulesets.resolveRulesets({ rulesetIds }, { headers: headersFor(principal) });
  if (resolved.missingIds.length > 0)
    throw invalidArgument(resolved.missingIds.map((id) => unknownRuleset(id, sources)));
  return runRules(
    resolved.rulesets.map(({ ruleset, rules }) => ({ name: ruleset?.name ?? "", rules: rules.map(ruleOf) })),
  );
}

function unknownRuleset(id: string, sources: RulesetIdSource[]) {
  const found = firstPathOf(id, sources);
  if (!found) return { path: sources[0]?.field ?? "body.ruleset_ids", message: `no ruleset ${id} in the organization` };
  return found.field.startsWith("assistant.")
    ? {
        path: found.path,
        message: `the assistant names ruleset ${id}, which does not exist in the organization; give ruleset_ids to replace the assistant's list`,
      }
    : { path: found.path, message: `no ruleset ${id} in the organization` };
}

/** A rule's text, or its JSON object (a JSON schema); the assistants service stores nothing else. */
function ruleOf(rule: Rule): string | JsonObject {
  const value = valueToJson(rule.rule);
  if (typeof value === "string") return value;
  if (value !== null && typeof value === "object" && !Array.isArray(value)) return value;
  return JSON.stringify(value);
}
