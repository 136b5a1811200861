import { jsonToValue, valueToJson } from "@loom/contracts/json-value";
import { pageBounds } from "@loom/contracts/paging";
import { maxRuleLength } from "@loom/contracts/rules";
import type { Rule } from "@loom/proto/assistants/v1/rulesets_pb";
import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import { isoTime, pagination } from "../json.ts";
import { defineOperation } from "../operation.ts";
import { ruleListSchema, ruleSchema } from "../schemas.ts";
import { boundedName, boundedText, jsonObject, pageQuery, uuid } from "../validation.ts";

/** An instruction, or a JSON schema the answer must follow (griptape's JsonSchemaRule). */
const ruleValue = z.union([boundedText(maxRuleLength), jsonObject], {
  error: `must be a string of 1 to ${maxRuleLength} characters or a JSON object`,
});

const createBody = z.object({
  name: boundedName(200).meta({ description: "The rule's name" }),
  rule: ruleValue.meta({
    description: "An instruction for the model, in words; or a JSON schema object its answer must follow",
  }),
  metadata: jsonObject.optional().meta({ description: "Any JSON object to keep with it" }),
});

const updateBody = createBody.partial();

export function ruleJson(r: Rule | undefined) {
  if (!r) throw new Error("the assistants service answered without a rule");
  return {
    rule_id: r.ruleId,
    organization_id: r.organizationId,
    name: r.name,
    rule: valueToJson(r.rule),
    metadata: r.metadata ?? {},
    created_at: isoTime(r.createdAt),
    created_by: r.createdBy,
    updated_at: isoTime(r.updatedAt),
  };
}

/** Rules (docs/behaviour.md §5): a ruleset lists them by id. */
export function ruleOperations({ rulesets }: ServiceClients) {
  const rulePath = z.object({ rule_id: uuid });
  return [
    defineOperation({
      id: "ListRules",
      method: "GET",
      path: "/rules",
      summary:
        "The organization's rules, newest first; with ruleset_id, that ruleset's rules in its rule_ids order (all of them when page_size is absent)",
      query: pageQuery.extend({
        ruleset_id: uuid.optional().meta({ description: "Only this ruleset's rules, in its order" }),
      }),
      response: { status: 200, description: "A page of rules", schema: ruleListSchema },
      async handle({ query, call, ctx }) {
        // griptape's ruleset driver reads one page of a ruleset's rules: without page_size, the whole ruleset
        // (it holds at most maxPageSize rules, docs/api.md §4).
        const wholeRuleset = query.ruleset_id !== undefined && ctx.query.page_size === undefined;
        const res = await rulesets.listRules(
          {
            page: { page: query.page, pageSize: wholeRuleset ? pageBounds.maxPageSize : query.page_size },
            rulesetId: query.ruleset_id,
          },
          call,
        );
        return { rules: res.rules.map(ruleJson), pagination: pagination(res.page) };
      },
    }),
    defineOperation({
      id: "CreateRule",
      method: "POST",
      path: "/rules",
      summary: "Creates a rule: an instruction, or a JSON schema the answer must follow",
      body: { schema: createBody, required: true },
      response: { status: 201, description: "The new rule", schema: ruleSchema },
      handle: async ({ body, call }) =>
        ruleJson(
          (await rulesets.createRule({ name: body.name, rule: jsonToValue(body.rule), metadata: body.metadata }, call))
            .rule,
        ),
    }),
    defineOperation({
      id: "GetRule",
      method: "GET",
      path: "/rules/{rule_id}",
      summary: "One rule",
      params: rulePath,
      response: { status: 200, description: "The rule", schema: ruleSchema },
      handle: async ({ params, call }) => ruleJson((await rulesets.getRule({ ruleId: params.rule_id }, call)).rule),
    }),
    defineOperation({
      id: "UpdateRule",
      method: "PATCH",
      path: "/rules/{rule_id}",
      summary: "Changes the given fields of a rule",
      params: rulePath,
      body: { schema: updateBody, required: false },
      response: { status: 200, description: "The rule as it is now", schema: ruleSchema },
      handle: async ({ params, body, call }) =>
        ruleJson(
          (
            await rulesets.updateRule(
              {
                ruleId: params.rule_id,
                name: body?.name,
                rule: body?.rule === undefined ? undefined : jsonToValue(body.rule),
                metadata: body?.metadata,
              },
              call,
            )
          ).rule,
        ),
    }),
    defineOperation({
      id: "DeleteRule",
      method: "DELETE",
      path: "/rules/{rule_id}",
      summary: "Deletes a rule and removes it from every ruleset that lists it",
      params: rulePath,
      response: { status: 204, description: "Deleted" },
      handle: async ({ params, call }) => void (await rulesets.deleteRule({ ruleId: params.rule_id }, call)),
    }),
  ];
}
