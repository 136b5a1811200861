import { newId } from "@loom/contracts/ids";
import { jsonToValue } from "@loom/contracts/json-value";
import { RulesetsService } from "@loom/proto/assistants/v1/rulesets_pb";
import { KnowledgeBasesService } from "@loom/proto/knowledge/v1/knowledge_bases_pb";
import { ToolsService } from "@loom/proto/tools/v1/tools_pb";
import { headersFor } from "@loom/server/principal";
import { clientFor, inProcessTransport } from "@loom/server/transports";
import { createLogger } from "@loom/telemetry/logger";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAssistantsService } from "../src/service.ts";
import type { AssistantsStore } from "../src/store/port.ts";
import { openAssistantsStore } from "../src/wiring.ts";

const logger = createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");
const organizationId = newId();
const call = { headers: headersFor({ userId: newId(), organizationId }) };

/**
 * A rule deleted between a ruleset write's check of its rules and the write
 * itself (no transaction spans both on MongoDB): the ruleset ends up without
 * it (docs/decisions.md, "Rulesets and rules").
 */
describe.each(storeKinds("rulesets races"))(
  "a rule deleted while a ruleset naming it is written (%s store)",
  (kind) => {
    const db = freshDatabaseName();
    let store: AssistantsStore;
    /** Runs once, just before the next ruleset write reaches the store. */
    let beforeWrite: (() => Promise<unknown>) | undefined;
    let rulesets: ReturnType<typeof clientFor<typeof RulesetsService>>;

    beforeAll(async () => {
      store = await openAssistantsStore({ url: kind === "mongo" ? testServers.mongoUrl : undefined, db });
      await store.init();
      const interleaved = (write: "insertRuleset" | "updateRuleset") =>
        (async (...args: unknown[]) => {
          const step = beforeWrite;
          beforeWrite = undefined;
          await step?.();
          return (store[write] as (...a: unknown[]) => Promise<unknown>)(...args);
        }) as never;
      const racing: AssistantsStore = {
        ...store,
        insertRuleset: interleaved("insertRuleset"),
        updateRuleset: interleaved("updateRuleset"),
      };
      rulesets = clientFor(
        RulesetsService,
        inProcessTransport(
          [
            createAssistantsService({
              store: racing,
              // No knowledge base or tool ids here: those services (none behind these transports) are never asked.
              knowledgeBases: clientFor(KnowledgeBasesService, inProcessTransport([], "test-token", logger)),
              tools: clientFor(ToolsService, inProcessTransport([], "test-token", logger)),
            }),
          ],
          "test-token",
          logger,
        ),
      );
    });
    afterAll(async () => {
      await store?.close();
      if (kind === "mongo") await dropDatabase(testServers.mongoUrl!, db);
    });

    const rule = async () => (await rulesets.createRule({ name: "r", rule: jsonToValue("Rule.") }, call)).rule!.ruleId;

    it("on create: the answer and the stored ruleset leave it out", async () => {
      const [kept, doomed] = [await rule(), await rule()];
      beforeWrite = () => rulesets.deleteRule({ ruleId: doomed }, call);
      const created = (await rulesets.createRuleset({ name: "s", ruleIds: [doomed, kept] }, call)).ruleset!;
      expect(created.ruleIds).toEqual([kept]);
      expect((await rulesets.getRuleset({ rulesetId: created.rulesetId }, call)).ruleset!.ruleIds).toEqual([kept]);
    });

    it("on update: the same", async () => {
      const [kept, doomed] = [await rule(), await rule()];
      const id = (await rulesets.createRuleset({ name: "s" }, call)).ruleset!.rulesetId;
      beforeWrite = () => rulesets.deleteRule({ ruleId: doomed }, call);
      const updated = (await rulesets.updateRuleset({ rulesetId: id, ruleIds: { values: [kept, doomed] } }, call))
        .ruleset!;
      expect(updated.ruleIds).toEqual([kept]);
      expect((await rulesets.getRuleset({ rulesetId: id }, call)).ruleset!.ruleIds).toEqual([kept]);
    });
  },
);
