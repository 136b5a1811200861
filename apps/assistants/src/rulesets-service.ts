import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { timestampFromDate, type Value } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { failedPrecondition, invalidArgument, notFound, type Violation } from "@loom/contracts/errors";
import { isUuid, newId } from "@loom/contracts/ids";
import { jsonToValue, valueToJson } from "@loom/contracts/json-value";
import { pageInfo, pageWindow } from "@loom/contracts/paging";
import { maxRuleLength } from "@loom/contracts/rules";
import { checkText, lengthProblem, nameProblem } from "@loom/contracts/text";
import type { RulesetsService } from "@loom/proto/assistants/v1/rulesets_pb";
import { requirePrincipal } from "@loom/server/principal";
import { checkIds, checkKnown } from "./field-checks.ts";
import type { AssistantsStore } from "./store/port.ts";
import type { RulePatch, RuleRecord, RulesetPatch, RulesetRecord } from "./store/rulesets.ts";

/** Most assistant ids a refused DeleteRuleset names. */
const namedAssistantsShown = 10;

/**
 * A rule as given: a non-empty string (an instruction) or a JSON object (a
 * JSON schema, griptape's JsonSchemaRule), kept exactly as given.
 */
function checkRule(violations: Violation[], value: Value | undefined): string | JsonObject | undefined {
  const rule = valueToJson(value);
  if (typeof rule === "string") {
    const problem = lengthProblem(rule, 1, maxRuleLength);
    if (!problem) return rule;
    violations.push({ path: "body.rule", message: problem });
    return undefined;
  }
  if (isJsonObject(rule)) return rule;
  violations.push({ path: "body.rule", message: "must be a non-empty string or a JSON object" });
  return undefined;
}

const isJsonObject = (value: JsonValue): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Each rule id once: a rule is given to the model once per ruleset. */
function checkNoRepeats(violations: Violation[], path: string, ids: string[]): void {
  ids.forEach((id, i) => {
    if (ids.indexOf(id) < i) violations.push({ path: `${path}[${i}]`, message: `repeats ${id}` });
  });
}

/** The RulesetsService handlers (docs/behaviour.md §5), on the assistants store's rulesets part. */
export function createRulesetsHandlers(deps: {
  store: AssistantsStore;
  now?: () => Date;
}): ServiceImpl<typeof RulesetsService> {
  const { store } = deps;
  const now = deps.now ?? (() => new Date());

  /** A ruleset's `rule_ids`: uuids of the organization's rules, each once; lower case. */
  async function checkRuleIds(violations: Violation[], organizationId: string, given: string[] | undefined) {
    const ids = checkIds(violations, "body.rule_ids", given);
    if (!ids?.length) return ids;
    checkNoRepeats(violations, "body.rule_ids", ids);
    const found = await store.getRules(organizationId, ids);
    checkKnown(violations, "body.rule_ids", ids, new Set(found.map((r) => r.id)), "rule");
    return ids;
  }

  /**
   * After a ruleset is written: drops the ids of rules deleted since they
   * were checked, which the rule's delete may have missed (no transaction
   * spans both on MongoDB: docs/decisions.md, "Rulesets and rules").
   */
  async function withoutDeletedRules(ruleset: RulesetRecord): Promise<RulesetRecord | undefined> {
    if (ruleset.ruleIds.length === 0) return ruleset;
    const found = new Set((await store.getRules(ruleset.organizationId, ruleset.ruleIds)).map((r) => r.id));
    const gone = ruleset.ruleIds.filter((id) => !found.has(id));
    return gone.length === 0 ? ruleset : store.dropRuleIds(ruleset.organizationId, ruleset.id, gone, now());
  }

  /** A ruleset's rules in its `rule_ids` order (ids of rules deleted meanwhile left out). */
  async function rulesOf(ruleset: RulesetRecord): Promise<RuleRecord[]> {
    const byId = new Map((await store.getRules(ruleset.organizationId, ruleset.ruleIds)).map((r) => [r.id, r]));
    return ruleset.ruleIds.flatMap((id) => byId.get(id) ?? []);
  }

  return {
    async createRuleset(req, ctx) {
      const principal = requirePrincipal(ctx);
      const violations: Violation[] = [];
      checkText(violations, "body.name", req.name, 200, nameProblem);
      checkText(violations, "body.description", req.description, 200);
      const ruleIds = await checkRuleIds(violations, principal.organizationId, req.ruleIds);
      if (violations.length > 0) throw invalidArgument(violations);
      const at = now();
      const ruleset: RulesetRecord = {
        id: newId(),
        organizationId: principal.organizationId,
        name: req.name,
        ...(req.alias !== undefined ? { alias: req.alias } : {}),
        description: req.description ?? "",
        metadata: req.metadata ?? {},
        ruleIds: ruleIds ?? [],
        createdBy: principal.userId,
        createdAt: at,
        updatedAt: at,
      };
      await store.insertRuleset(ruleset);
      return { ruleset: rulesetMessage((await withoutDeletedRules(ruleset)) ?? ruleset) };
    },

    async getRuleset(req, ctx) {
      const found = await store.getRuleset(requirePrincipal(ctx).organizationId, req.rulesetId);
      if (!found) throw notFound("ruleset");
      return { ruleset: rulesetMessage(found) };
    },

    async updateRuleset(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      const violations: Violation[] = [];
      checkText(violations, "body.name", req.name, 200, nameProblem);
      checkText(violations, "body.description", req.description, 200);
      const patch: RulesetPatch = {
        name: req.name,
        alias: req.alias,
        description: req.description,
        metadata: req.metadata,
        ruleIds: await checkRuleIds(violations, organizationId, req.ruleIds?.values),
      };
      if (violations.length > 0) throw invalidArgument(violations);
      const given = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as RulesetPatch;
      const updated =
        Object.keys(given).length === 0
          ? await store.getRuleset(organizationId, req.rulesetId)
          : await store.updateRuleset(organizationId, req.rulesetId, given, now());
      const current = updated && given.ruleIds ? await withoutDeletedRules(updated) : updated;
      if (!current) throw notFound("ruleset");
      return { ruleset: rulesetMessage(current) };
    },

    async deleteRuleset(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      if (!(await store.getRuleset(organizationId, req.rulesetId))) throw notFound("ruleset");
      // An assistant's rulesets exist (docs/behaviour.md §5): detach it from them first.
      const naming = await store.namingRuleset(organizationId, req.rulesetId, namedAssistantsShown + 1);
      if (naming.length > 0) {
        const shown = naming.slice(0, namedAssistantsShown).join(", ");
        const more = naming.length > namedAssistantsShown ? " and others" : "";
        throw failedPrecondition(
          `ruleset ${req.rulesetId} is in the ruleset_ids of assistant(s) ${shown}${more}: remove it from them first`,
        );
      }
      if (!(await store.deleteRuleset(organizationId, req.rulesetId))) throw notFound("ruleset");
      return {};
    },

    async listRulesets(req, ctx) {
      const window = pageWindow(req.page);
      const { items, totalCount } = await store.listRulesets(
        requirePrincipal(ctx).organizationId,
        req.alias,
        window.skip,
        window.pageSize,
      );
      return { rulesets: items.map(rulesetMessage), page: pageInfo(window, totalCount) };
    },

    async createRule(req, ctx) {
      const principal = requirePrincipal(ctx);
      const violations: Violation[] = [];
      checkText(violations, "body.name", req.name, 200, nameProblem);
      const rule = checkRule(violations, req.rule);
      if (violations.length > 0 || rule === undefined) throw invalidArgument(violations);
      const at = now();
      const record: RuleRecord = {
        id: newId(),
        organizationId: principal.organizationId,
        name: req.name,
        rule,
        metadata: req.metadata ?? {},
        createdBy: principal.userId,
        createdAt: at,
        updatedAt: at,
      };
      await store.insertRule(record);
      return { rule: ruleMessage(record) };
    },

    async getRule(req, ctx) {
      const found = await store.getRule(requirePrincipal(ctx).organizationId, req.ruleId);
      if (!found) throw notFound("rule");
      return { rule: ruleMessage(found) };
    },

    async updateRule(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      const violations: Violation[] = [];
      checkText(violations, "body.name", req.name, 200, nameProblem);
      const patch: RulePatch = {
        name: req.name,
        rule: req.rule === undefined ? undefined : checkRule(violations, req.rule),
        metadata: req.metadata,
      };
      if (violations.length > 0) throw invalidArgument(violations);
      const given = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as RulePatch;
      const updated =
        Object.keys(given).length === 0
          ? await store.getRule(organizationId, req.ruleId)
          : await store.updateRule(organizationId, req.ruleId, given, now());
      if (!updated) throw notFound("rule");
      return { rule: ruleMessage(updated) };
    },

    async deleteRule(req, ctx) {
      if (!(await store.deleteRule(requirePrincipal(ctx).organizationId, req.ruleId, now()))) throw notFound("rule");
      return {};
    },

    async listRules(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      const window = pageWindow(req.page);
      if (req.rulesetId === undefined) {
        const { items, totalCount } = await store.listRules(organizationId, window.skip, window.pageSize);
        return { rules: items.map(ruleMessage), page: pageInfo(window, totalCount) };
      }
      const ruleset = await store.getRuleset(organizationId, req.rulesetId);
      if (!ruleset) throw notFound("ruleset");
      // At most maxIdsPerArray rules: paged here, in the ruleset's order.
      const rules = await rulesOf(ruleset);
      return {
        rules: rules.slice(window.skip, window.skip + window.pageSize).map(ruleMessage),
        page: pageInfo(window, rules.length),
      };
    },

    async resolveRulesets(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      const asked = req.rulesetIds.map((id) => id.toLowerCase());
      const found = await store.getRulesets(organizationId, asked.filter(isUuid));
      const byId = new Map(found.map((r) => [r.id, r]));
      const rules = new Map(
        (await store.getRules(organizationId, [...new Set(found.flatMap((r) => r.ruleIds))])).map((r) => [r.id, r]),
      );
      const rulesets = asked.flatMap((id) => {
        const ruleset = byId.get(id);
        if (!ruleset) return [];
        const itsRules = ruleset.ruleIds.flatMap((ruleId) => rules.get(ruleId) ?? []);
        return [{ ruleset: rulesetMessage(ruleset), rules: itsRules.map(ruleMessage) }];
      });
      return { rulesets, missingIds: req.rulesetIds.filter((_, i) => !byId.has(asked[i]!)) };
    },
  };
}

function rulesetMessage(r: RulesetRecord) {
  return {
    rulesetId: r.id,
    organizationId: r.organizationId,
    name: r.name,
    alias: r.alias,
    description: r.description,
    metadata: r.metadata,
    ruleIds: r.ruleIds,
    createdBy: r.createdBy,
    createdAt: timestampFromDate(r.createdAt),
    updatedAt: timestampFromDate(r.updatedAt),
  };
}

function ruleMessage(r: RuleRecord) {
  return {
    ruleId: r.id,
    organizationId: r.organizationId,
    name: r.name,
    rule: jsonToValue(r.rule),
    metadata: r.metadata,
    createdBy: r.createdBy,
    createdAt: timestampFromDate(r.createdAt),
    updatedAt: timestampFromDate(r.updatedAt),
  };
}
