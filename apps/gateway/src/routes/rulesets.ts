import type { Ruleset } from "@loom/proto/assistants/v1/rulesets_pb";
import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import { isoTime, pagination } from "../json.ts";
import { defineOperation } from "../operation.ts";
import { rulesetListSchema, rulesetSchema } from "../schemas.ts";
import { boundedName, boundedText, idArray, jsonObject, pageQuery, uuid } from "../validation.ts";

const createBody = z.object({
  name: boundedName(200).meta({ description: "The ruleset's name" }),
  alias: z.string().optional().meta({ description: "Another name to find it by (`?alias=` of ListRulesets)" }),
  description: boundedText(200).optional().meta({ description: "What the ruleset is for, in words" }),
  metadata: jsonObject.optional().meta({ description: "Any JSON object to keep with it" }),
  rule_ids: idArray.optional().meta({
    description:
      "Its rules, each once, in the order they reach the model; on an update the whole list (`[]` empties it)",
  }),
});

const updateBody = createBody.partial();

export function rulesetJson(r: Ruleset | undefined) {
  if (!r) throw new Error("the assistants service answered without a ruleset");
  return {
    ruleset_id: r.rulesetId,
    organization_id: r.organizationId,
    name: r.name,
    alias: r.alias ?? null,
    description: r.description,
    metadata: r.metadata ?? {},
    rule_ids: r.ruleIds,
    created_at: isoTime(r.createdAt),
    created_by: r.createdBy,
    updated_at: isoTime(r.updatedAt),
  };
}

/** Rulesets (docs/behaviour.md §5): griptape's ruleset driver finds one by alias, then lists its rules. */
export function rulesetOperations({ rulesets }: ServiceClients) {
  const rulesetPath = z.object({ ruleset_id: uuid });
  return [
    defineOperation({
      id: "ListRulesets",
      method: "GET",
      path: "/rulesets",
      summary: "The organization's rulesets, newest first, optionally by alias",
      query: pageQuery.extend({
        alias: z.string().optional().meta({ description: "Only the rulesets of this alias" }),
      }),
      response: {
        status: 200,
        description: "A page of rulesets (none matching is an empty page)",
        schema: rulesetListSchema,
      },
      async handle({ query, call }) {
        const res = await rulesets.listRulesets(
          { page: { page: query.page, pageSize: query.page_size }, alias: query.alias },
          call,
        );
        return { rulesets: res.rulesets.map(rulesetJson), pagination: pagination(res.page) };
      },
    }),
    defineOperation({
      id: "CreateRuleset",
      method: "POST",
      path: "/rulesets",
      summary: "Creates a ruleset of the organization's rules",
      body: { schema: createBody, required: true },
      response: { status: 201, description: "The new ruleset", schema: rulesetSchema },
      handle: async ({ body, call }) =>
        rulesetJson(
          (
            await rulesets.createRuleset(
              {
                name: body.name,
                alias: body.alias,
                description: body.description,
                metadata: body.metadata,
                ruleIds: body.rule_ids,
              },
              call,
            )
          ).ruleset,
        ),
    }),
    defineOperation({
      id: "GetRuleset",
      method: "GET",
      path: "/rulesets/{ruleset_id}",
      summary: "One ruleset",
      params: rulesetPath,
      response: { status: 200, description: "The ruleset", schema: rulesetSchema },
      handle: async ({ params, call }) =>
        rulesetJson((await rulesets.getRuleset({ rulesetId: params.ruleset_id }, call)).ruleset),
    }),
    defineOperation({
      id: "UpdateRuleset",
      method: "PATCH",
      path: "/rulesets/{ruleset_id}",
      summary: "Changes the given fields of a ruleset; rule_ids replaces the list",
      params: rulesetPath,
      body: { schema: updateBody, required: false },
      response: { status: 200, description: "The ruleset as it is now", schema: rulesetSchema },
      handle: async ({ params, body, call }) =>
        rulesetJson(
          (
            await rulesets.updateRuleset(
              {
                rulesetId: params.ruleset_id,
                name: body?.name,
                alias: body?.alias,
                description: body?.description,
                metadata: body?.metadata,
                ruleIds: body?.rule_ids === undefined ? undefined : { values: body.rule_ids },
              },
              call,
            )
          ).ruleset,
        ),
    }),
    defineOperation({
      id: "DeleteRuleset",
      method: "DELETE",
      path: "/rulesets/{ruleset_id}",
      summary: "Deletes a ruleset no assistant names (409 otherwise); its rules are kept",
      params: rulesetPath,
      response: { status: 204, description: "Deleted" },
      handle: async ({ params, call }) => void (await rulesets.deleteRuleset({ rulesetId: params.ruleset_id }, call)),
    }),
  ];
}
