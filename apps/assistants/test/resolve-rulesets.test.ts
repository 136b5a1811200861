import { newId } from "@loom/contracts/ids";
import { jsonToValue, valueToJson } from "@loom/contracts/json-value";
import { AssistantsService } from "@loom/proto/assistants/v1/assistants_pb";
import { RulesetsService } from "@loom/proto/assistants/v1/rulesets_pb";
import { headersFor } from "@loom/server/principal";
import type { RpcService } from "@loom/server/rpc-service";
import { clientFor, inProcessTransport } from "@loom/server/transports";
import { createLogger } from "@loom/telemetry/logger";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openAssistantsStore, wireAssistants } from "../src/wiring.ts";

const logger = createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");

/** ResolveRulesets, as the runs service calls it (docs/behaviour.md §5). */
describe.each(storeKinds("ResolveRulesets"))("ResolveRulesets (%s store)", (kind) => {
  const db = freshDatabaseName();
  let service: RpcService;
  let rulesets: ReturnType<typeof clientFor<typeof RulesetsService>>;
  let assistants: ReturnType<typeof clientFor<typeof AssistantsService>>;
  const call = { headers: headersFor({ userId: newId(), organizationId: newId() }) };
  const strangerCall = { headers: headersFor({ userId: newId(), organizationId: newId() }) };

  beforeAll(async () => {
    // No knowledge base ids here: the knowledge service (none behind this transport) is never asked.
    service = await wireAssistants(
      await openAssistantsStore({ url: kind === "mongo" ? testServers.mongoUrl : undefined, db }),
      // No knowledge base or tool ids here: those services (none behind these transports) are never asked.
      {
        knowledge: inProcessTransport([], "test-token", logger),
        tools: inProcessTransport([], "test-token", logger),
      },
    );
    const transport = inProcessTransport([service], "test-token", logger);
    rulesets = clientFor(RulesetsService, transport);
    assistants = clientFor(AssistantsService, transport);
  });
  afterAll(async () => {
    await service?.close();
    if (kind === "mongo") await dropDatabase(testServers.mongoUrl!, db);
  });

  const rule = async (value: unknown, on = call) =>
    (await rulesets.createRule({ name: "r", rule: jsonToValue(value) }, on)).rule!.ruleId;
  const ruleset = async (ruleIds: string[], on = call) =>
    (await rulesets.createRuleset({ name: "s", ruleIds }, on)).ruleset!.rulesetId;

  it("answers the rulesets asked for in the order asked, each with its rules in its rule_ids order", async () => {
    const [a, b, schema] = [await rule("First."), await rule("Second."), await rule({ type: "object" })];
    const first = await ruleset([b, schema, a]);
    const second = await ruleset([a]);
    const empty = await ruleset([]);
    const res = await rulesets.resolveRulesets({ rulesetIds: [second, empty, first] }, call);
    expect(res.missingIds).toEqual([]);
    expect(res.rulesets.map((r) => r.ruleset!.rulesetId)).toEqual([second, empty, first]);
    expect(res.rulesets.map((r) => r.rules.map((x) => x.ruleId))).toEqual([[a], [], [b, schema, a]]);
    expect(res.rulesets[2]!.rules.map((x) => valueToJson(x.rule))).toEqual(["Second.", { type: "object" }, "First."]);
  });

  it("lists unknown ids, ids that are not uuids and other organizations' ids as missing, in the order asked", async () => {
    const mine = await ruleset([await rule("Mine.")]);
    const theirs = await ruleset([await rule("Theirs.", strangerCall)], strangerCall);
    const unknown = newId();
    const res = await rulesets.resolveRulesets({ rulesetIds: [unknown, mine, "not-a-uuid", theirs] }, call);
    expect(res.rulesets.map((r) => r.ruleset!.rulesetId)).toEqual([mine]);
    expect(res.missingIds).toEqual([unknown, "not-a-uuid", theirs]);
    expect((await rulesets.resolveRulesets({ rulesetIds: [] }, call)).rulesets).toEqual([]);
  });

  it("leaves out a deleted rule", async () => {
    const [kept, doomed] = [await rule("Kept."), await rule("Doomed.")];
    const id = await ruleset([doomed, kept]);
    await rulesets.deleteRule({ ruleId: doomed }, call);
    const res = await rulesets.resolveRulesets({ rulesetIds: [id] }, call);
    expect(res.rulesets[0]!.ruleset!.ruleIds).toEqual([kept]);
    expect(res.rulesets[0]!.rules.map((r) => r.ruleId)).toEqual([kept]);
  });

  it("refuses an assistant naming a ruleset of no one, or of another organization", async () => {
    const theirs = await ruleset([], strangerCall);
    await expect(assistants.createAssistant({ name: "a", rulesetIds: [theirs] }, call)).rejects.toThrow(
      `body.ruleset_ids[0]: no ruleset ${theirs} exists`,
    );
  });
});
