import { isTerminal, terminalLifecycleEvents } from "@loom/contracts/run-lifecycle";
import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import type { ApiClient } from "@loom/testing/http";
import { createScriptedModel } from "@loom/testing/scripted-model";
import { storeKinds } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { expectError } from "./expect-error.ts";
import { organizationClients } from "./organization-clients.ts";

const uuid = () => crypto.randomUUID();

/**
 * Tool ids name tools that exist (docs/decisions.md, "Runs that call
 * tools"), as ruleset ids do: an assistant's `tool_ids` when it is created or
 * updated, a run's `tool_ids` and `additional_tool_ids` when it is created.
 * An unknown, deleted or another organization's id is 400 at its field, and
 * nothing is written. A tool deleted after it was given is skipped when a
 * run starts, with a SYSTEM event.
 */
describe.each(storeKinds("tool ids over HTTP"))("tool ids must exist (%s store)", (store) => {
  let stack: TestStack;
  let admin: ApiClient;
  let stranger: ApiClient;
  const model = createScriptedModel();

  beforeAll(async () => {
    stack = await startStack(store, { inject: { runs: { model } } });
    ({ admin, stranger } = await organizationClients(stack, `tool-ids-stranger-${store}`));
  });
  afterAll(() => stack?.close());

  const newTool = async (client = admin) => (await client.post("/tools", { name: "T" })).body.tool_id as string;
  const deletedTool = async () => {
    const id = await newTool();
    expect((await admin.delete(`/tools/${id}`)).status).toBe(204);
    return id;
  };
  const count = async (path: string) => (await admin.get(path)).body.pagination.total_count as number;

  it("CreateAssistant refuses an unknown, deleted or another organization's tool id, naming it; nothing stored", async () => {
    const before = await count("/assistants");
    const [mine, unknown, deleted, theirs] = [await newTool(), uuid(), await deletedTool(), await newTool(stranger)];
    const body = expectError(
      await admin.post("/assistants", { name: "a", tool_ids: [mine, unknown, deleted, theirs] }),
      400,
      "ValidationError",
    );
    expect(body.errors).toEqual([
      { path: "body.tool_ids[1]", message: expect.stringContaining(unknown) },
      { path: "body.tool_ids[2]", message: expect.stringContaining(deleted) },
      { path: "body.tool_ids[3]", message: expect.stringContaining(theirs) },
    ]);
    expect(await count("/assistants")).toBe(before);
    expect((await admin.post("/assistants", { name: "a", tool_ids: [mine] })).body.tool_ids).toEqual([mine]);
  });

  it("UpdateAssistant refuses one too, changing nothing", async () => {
    const created = (await admin.post("/assistants", { name: "a", tool_ids: [await newTool()] })).body;
    const theirs = await newTool(stranger);
    const body = expectError(
      await admin.patch(`/assistants/${created.assistant_id}`, { name: "renamed", tool_ids: [theirs] }),
      400,
      "ValidationError",
    );
    expect(body.errors).toEqual([{ path: "body.tool_ids[0]", message: expect.stringContaining(theirs) }]);
    expect((await admin.get(`/assistants/${created.assistant_id}`)).body).toEqual(created);
  });

  it("CreateAssistantRun refuses one in tool_ids or additional_tool_ids, naming the field; no run created", async () => {
    const assistantId = (await admin.post("/assistants", { name: "a" })).body.assistant_id as string;
    const runs = `/assistants/${assistantId}/runs`;
    const [mine, unknown, theirs] = [await newTool(), uuid(), await newTool(stranger)];
    const replaced = expectError(
      await admin.post(runs, { tool_ids: [mine, unknown], additional_tool_ids: [theirs] }),
      400,
      "ValidationError",
    );
    expect(replaced.errors).toEqual([
      { path: "body.tool_ids[1]", message: expect.stringContaining(unknown) },
      { path: "body.additional_tool_ids[0]", message: expect.stringContaining(theirs) },
    ]);
    const deleted = await deletedTool();
    const appended = expectError(
      await admin.post(runs, { additional_tool_ids: [mine, deleted] }),
      400,
      "ValidationError",
    );
    expect(appended.errors).toEqual([
      { path: "body.additional_tool_ids[1]", message: expect.stringContaining(deleted) },
    ]);
    expect(await count(runs)).toBe(0);
  });

  it("a tool deleted after the assistant was given it: the run still starts, goes without it, and a SYSTEM event says so", async () => {
    const doomed = await newTool();
    const assistantId = (await admin.post("/assistants", { name: "a", tool_ids: [doomed] })).body.assistant_id;
    expect((await admin.delete(`/tools/${doomed}`)).status).toBe(204);
    model.script({ answer: () => "without it" });
    const res = await admin.post(`/assistants/${assistantId}/runs`, { input: "go" });
    expect(res.status).toBe(201);
    expect(res.body.tool_ids).toEqual([doomed]);
    const runId = res.body.assistant_run_id as string;
    let events: any[] = [];
    await vi.waitFor(
      async () => {
        const run = (await admin.get(`/assistant-runs/${runId}`)).body;
        events = (await admin.get(`/assistant-runs/${runId}/events?offset=0&limit=1000`)).body.events;
        expect(isTerminal(run.status)).toBe(true);
        expect(terminalLifecycleEvents.has(events.at(-1)?.type)).toBe(true);
      },
      { timeout: 10_000, interval: 20 },
    );
    expect((await admin.get(`/assistant-runs/${runId}`)).body.status).toBe("SUCCEEDED");
    expect(events.find((e) => e.type === "AssistantRunToolUnavailable")).toMatchObject({
      origin: "SYSTEM",
      payload: { tool_id: doomed },
    });
  });
});
