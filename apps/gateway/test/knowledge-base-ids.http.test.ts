import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import type { ApiClient } from "@loom/testing/http";
import { storeKinds } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError } from "./expect-error.ts";
import { organizationClients } from "./organization-clients.ts";

const uuid = () => crypto.randomUUID();

/** An assistant's and a run's knowledge_base_ids name knowledge bases of the organization, as ruleset ids name rulesets. */
describe.each(storeKinds("knowledge base ids over HTTP"))("knowledge base ids over HTTP (%s store)", (store) => {
  let stack: TestStack;
  let admin: ApiClient;
  let stranger: ApiClient;

  beforeAll(async () => {
    stack = await startStack(store);
    ({ admin, stranger } = await organizationClients(stack, `kb-ids-stranger-${store}`));
  });
  afterAll(() => stack?.close());

  const knowledgeBase = async (client = admin) =>
    (await client.post("/knowledge-bases", { name: "k" })).body.knowledge_base_id as string;
  const count = async (path: string) => (await admin.get(path)).body.pagination.total_count as number;

  describe("assistants", () => {
    it("CreateAssistant refuses an id of no knowledge base (or another organization's), naming it; nothing stored", async () => {
      const before = await count("/assistants");
      const [mine, unknown, theirs] = [await knowledgeBase(), uuid(), await knowledgeBase(stranger)];
      const body = expectError(
        await admin.post("/assistants", { name: "a", knowledge_base_ids: [mine, unknown, theirs.toUpperCase()] }),
        400,
        "ValidationError",
      );
      expect(body.errors).toEqual([
        { path: "body.knowledge_base_ids[1]", message: `no knowledge base ${unknown} exists` },
        { path: "body.knowledge_base_ids[2]", message: `no knowledge base ${theirs} exists` },
      ]);
      expect(await count("/assistants")).toBe(before);
      const created = await admin.post("/assistants", { name: "a", knowledge_base_ids: [mine.toUpperCase()] });
      expect(created.body.knowledge_base_ids).toEqual([mine]);
    });

    it("UpdateAssistant refuses one too, with a bad ruleset id beside it, changing nothing", async () => {
      const mine = await knowledgeBase();
      const created = (await admin.post("/assistants", { name: "a", knowledge_base_ids: [mine] })).body;
      const [unknownBase, unknownRuleset] = [uuid(), uuid()];
      const body = expectError(
        await admin.patch(`/assistants/${created.assistant_id}`, {
          name: "renamed",
          ruleset_ids: [unknownRuleset],
          knowledge_base_ids: [mine, unknownBase],
        }),
        400,
        "ValidationError",
      );
      expect(body.errors.map((e) => e.path)).toEqual(["body.ruleset_ids[0]", "body.knowledge_base_ids[1]"]);
      expect((await admin.get(`/assistants/${created.assistant_id}`)).body).toEqual(created);
      const emptied = await admin.patch(`/assistants/${created.assistant_id}`, { knowledge_base_ids: [] });
      expect(emptied.body.knowledge_base_ids).toEqual([]);
    });
  });

  describe("runs", () => {
    const runs = async (assistantId: string) => count(`/assistants/${assistantId}/runs`);

    it("a run's knowledge_base_ids and additional_knowledge_base_ids must exist: 400 naming the field, no run", async () => {
      const assistantId = (await admin.post("/assistants", { name: "a" })).body.assistant_id;
      const [mine, unknown, theirs] = [await knowledgeBase(), uuid(), await knowledgeBase(stranger)];
      const replaced = expectError(
        await admin.post(`/assistants/${assistantId}/runs`, { knowledge_base_ids: [mine, unknown] }),
        400,
        "ValidationError",
      );
      expect(replaced.errors).toEqual([
        { path: "body.knowledge_base_ids[1]", message: `no knowledge base ${unknown} in the organization` },
      ]);
      const appended = expectError(
        await admin.post(`/assistants/${assistantId}/runs`, { additional_knowledge_base_ids: [theirs] }),
        400,
        "ValidationError",
      );
      expect(appended.errors.map((e) => e.path)).toEqual(["body.additional_knowledge_base_ids[0]"]);
      expect(await runs(assistantId)).toBe(0);
      const run = await admin.post(`/assistants/${assistantId}/runs`, { additional_knowledge_base_ids: [mine] });
      expect(run.status).toBe(201);
      expect(run.body.knowledge_base_ids).toEqual([mine]);
    });

    it("an assistant naming a knowledge base deleted since: its runs are 400 at assistant.knowledge_base_ids[i], until a run replaces the list", async () => {
      const [kept, doomed] = [await knowledgeBase(), await knowledgeBase()];
      const assistantId = (await admin.post("/assistants", { name: "a", knowledge_base_ids: [kept, doomed] })).body
        .assistant_id;
      expect((await admin.delete(`/knowledge-bases/${doomed}`)).status).toBe(204);
      const body = expectError(await admin.post(`/assistants/${assistantId}/runs`, {}), 400, "ValidationError");
      expect(body.errors).toEqual([
        {
          path: "assistant.knowledge_base_ids[1]",
          message: `the assistant names knowledge base ${doomed}, which does not exist in the organization; give knowledge_base_ids to replace the assistant's list`,
        },
      ]);
      expect(await runs(assistantId)).toBe(0);
      const replaced = await admin.post(`/assistants/${assistantId}/runs`, { knowledge_base_ids: [kept] });
      expect(replaced.status).toBe(201);
      expect(replaced.body.knowledge_base_ids).toEqual([kept]);
    });
  });
});
