import { create } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { jsonToValue } from "@loom/contracts/json-value";
import {
  type ResolveRulesetsRequest,
  ResolveRulesetsResponseSchema,
  RuleSchema,
  RulesetSchema,
  type RulesetsService,
} from "@loom/proto/assistants/v1/rulesets_pb";
import { describe, expect, it } from "vitest";
import { readRunRules } from "../src/service/run-rules.ts";

const principal = { userId: "u", organizationId: "o" };
const [a, b, c] = [
  "11111111-1111-4111-8111-111111111111",
  "22222222-2222-4222-8222-222222222222",
  "33333333-3333-4333-8333-333333333333",
];

/** The assistants service as the runs service sees it: `known` rulesets by id; every call recorded. */
function rulesetsService(known: Record<string, { name: string; rules: unknown[] }>) {
  const calls: ResolveRulesetsRequest[] = [];
  const client = {
    async resolveRulesets(req: ResolveRulesetsRequest) {
      calls.push(req);
      return create(ResolveRulesetsResponseSchema, {
        rulesets: req.rulesetIds.flatMap((id) => {
          const found = known[id];
          if (!found) return [];
          return [
            {
              ruleset: create(RulesetSchema, { rulesetId: id, name: found.name }),
              rules: found.rules.map((rule) => create(RuleSchema, { rule: jsonToValue(rule) })),
            },
          ];
        }),
        missingIds: req.rulesetIds.filter((id) => !known[id]),
      });
    },
  } as unknown as Client<typeof RulesetsService>;
  return { client, calls };
}

async function refusal(reading: Promise<unknown>) {
  try {
    await reading;
  } catch (error) {
    return error as { message: string };
  }
  throw new Error("expected INVALID_ARGUMENT");
}

describe("reading a run's rules at its creation", () => {
  it("asks nothing for a run without rulesets", async () => {
    const { client, calls } = rulesetsService({});
    expect(await readRunRules(client, principal, [], [{ field: "body.ruleset_ids", ids: [] }])).toEqual({});
    expect(calls).toEqual([]);
  });

  it("renders the rulesets in the order asked, a JSON-object rule as the output schema", async () => {
    const schema = { type: "object" };
    const { client } = rulesetsService({ [a]: { name: "A", rules: ["first"] }, [b]: { name: "B", rules: [schema] } });
    const rules = await readRunRules(client, principal, [b, a], [{ field: "body.ruleset_ids", ids: [b, a] }]);
    expect(rules.instructions).toMatch(
      /^When responding.*\n\nRuleset name: B\n[\s\S]*\n\nRuleset name: A\n"A" rules:\nRule #1\nfirst$/,
    );
    expect(rules.outputSchema).toEqual(schema);
  });

  it("names where each missing id came from: the run's own list, the assistant's, the appended one", async () => {
    const { client } = rulesetsService({ [a]: { name: "A", rules: [] } });
    const fromBody = await refusal(
      readRunRules(
        client,
        principal,
        [a, b],
        [
          { field: "body.ruleset_ids", ids: [a, b] },
          { field: "body.additional_ruleset_ids", ids: [] },
        ],
      ),
    );
    expect(fromBody.message).toContain(`body.ruleset_ids[1]: no ruleset ${b} in the organization`);
    const fromAssistant = await refusal(
      readRunRules(
        client,
        principal,
        [b, a, c],
        [
          { field: "assistant.ruleset_ids", ids: [b] },
          { field: "body.additional_ruleset_ids", ids: [a, c] },
        ],
      ),
    );
    expect(fromAssistant.message).toContain(`assistant.ruleset_ids[0]: the assistant names ruleset ${b}`);
    expect(fromAssistant.message).toContain(`body.additional_ruleset_ids[1]: no ruleset ${c}`);
  });
});
