import { isTerminal, terminalLifecycleEvents } from "@loom/contracts/run-lifecycle";
import { ModelFailure } from "@loom/runs/models/port";
import type { WiredRunsService } from "@loom/runs/process";
import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { createScriptedModel } from "@loom/testing/scripted-model";
import { storeKinds } from "@loom/testing/servers";
import { signAccessToken } from "@loom/testing/tokens";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import {
  assistantEventListSchema,
  assistantRunListSchema,
  assistantRunSchema,
  textArtifactSchema,
  threadListSchema,
  threadSchema,
} from "../src/schemas.ts";
import { expectError } from "./expect-error.ts";

const uuid = () => crypto.randomUUID();
/** The run worker of the stack's runs service. */
const runWorker = (stack: TestStack) => (stack.wired("runs") as WiredRunsService).worker;

describe.each(storeKinds("assistant runs over HTTP"))("assistant runs over HTTP (%s store)", (store) => {
  let stack: TestStack;
  let admin: ApiClient;
  let stranger: ApiClient;
  const model = createScriptedModel();

  beforeAll(async () => {
    stack = await startStack(store, { inject: { runs: { model } } });
    admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
    stranger = apiClient(stack.gatewayUrl, await signAccessToken({ sub: `runs-stranger-${store}` }));
  });
  afterAll(() => stack?.close());

  const assistant = async (body: Record<string, unknown> = {}) =>
    (await admin.post("/assistants", { name: "a", ...body })).body.assistant_id as string;
  const created: string[] = [];
  const run = async (assistantId: string, body?: unknown, headers?: Record<string, string>) => {
    const res = await admin.post(`/assistants/${assistantId}/runs`, body, headers);
    if (res.status === 201) created.push(res.body.assistant_run_id);
    return res;
  };
  // Every test leaves no run behind: a run still going would take the next test's script.
  afterEach(async () => {
    for (const id of created.splice(0)) {
      // A run whose model answers ends by itself. Only one still going after that (a hanging model, parked
      // in RUNNING) is cancelled: a cancel landing mid-transition would race its worker on one document,
      // which FerretDB does not isolate (docs/decisions.md, Runs).
      const endsAlone = await settled(id, admin, 2_000).then(
        () => true,
        () => false,
      );
      if (endsAlone) continue;
      await admin.post(`/assistant-runs/${id}/cancel`);
      await settled(id);
    }
  });
  /** The run once it has ended and its log has too (the terminal event follows the terminal status); fails the test if that takes over `timeoutMs`. */
  async function settled(runId: string, client = admin, timeoutMs = 10_000) {
    let run: any;
    await vi.waitFor(
      async () => {
        run = (await client.get(`/assistant-runs/${runId}`)).body;
        const last =
          (await client.get(`/assistant-runs/${runId}/events?offset=0&limit=1000`)).body.events?.at(-1)?.type ?? "";
        expect(isTerminal(run.status), `run ${runId} is ${run.status}`).toBe(true);
        expect(terminalLifecycleEvents.has(last), `its log ends with ${last}`).toBe(true);
      },
      { timeout: timeoutMs, interval: 20 },
    );
    return run;
  }
  const lastCall = () => model.calls.at(-1)!;

  describe("create and run", () => {
    it("answers 201 QUEUED at once, then runs to SUCCEEDED with a griptape TextArtifact output", async () => {
      model.script({ answer: () => "the answer" });
      const res = await run(await assistant(), { input: "question" });
      expect(res.status).toBe(201);
      const created = assistantRunSchema.parse(res.body);
      expect(created).toMatchObject({
        status: "QUEUED",
        completed_at: null,
        input: "question",
        args: [],
        stream: false,
      });
      const done = assistantRunSchema.parse(await settled(created.assistant_run_id));
      expect(done.status).toBe("SUCCEEDED");
      expect(textArtifactSchema.parse(done.output).value).toBe("the answer");
      expect(done.completed_at).not.toBeNull();
      expect(done).not.toHaveProperty("status_detail");
    });

    it("accepts an absent body and the drivers' nulls", async () => {
      model.script({ answer: () => "ok" });
      const id = await assistant();
      expect((await run(id)).status).toBe(201);
      expect((await run(id, { thread_id: null, input: null, args: null })).status).toBe(201);
    });

    it.each([
      [
        "the run's input wins",
        { input: "A {{ args[0] }}" },
        { input: "R {{ args[1] }}|{{ args }}", args: ["x", "y"] },
        "R y|x y",
      ],
      ["else the assistant's input", { input: "A {{ args[0] }} {{args[5]}}!" }, { args: ["x"] }, "A x !"],
      ["else the args joined", {}, { args: ["one", "two"] }, "one two"],
    ])("renders the user message: %s", async (_what, assistantBody, runBody, expected) => {
      model.script({ answer: () => "ok" });
      const res = await run(await assistant(assistantBody), runBody);
      await settled(res.body.assistant_run_id);
      expect(lastCall().at(-1)).toEqual({ role: "user", content: expected });
    });

    it("records the effective ids: the run's arrays replace the assistant's, additional ones append without duplicates", async () => {
      model.script({ answer: () => "ok" });
      // Tools and knowledge bases of the organization (a run's ids must name some; the tools have no server: each run
      // goes without them).
      const [a, b, c, d, e] = await Promise.all(
        Array.from({ length: 5 }, async () => (await admin.post("/tools", { name: "T" })).body.tool_id as string),
      );
      const knowledgeBase = async () => (await admin.post("/knowledge-bases", { name: "k" })).body.knowledge_base_id;
      const [k1, k2] = [await knowledgeBase(), await knowledgeBase()];
      const r = (await admin.post("/rulesets", { name: "r" })).body.ruleset_id as string;
      const id = await assistant({ tool_ids: [a, b], ruleset_ids: [r], knowledge_base_ids: [k1] });
      const replaced = (await run(id, { tool_ids: [c], additional_tool_ids: [c, d], ruleset_ids: [] })).body;
      expect(replaced).toMatchObject({ tool_ids: [c, d], ruleset_ids: [], knowledge_base_ids: [k1] });
      const appended = (await run(id, { additional_tool_ids: [b, e], additional_knowledge_base_ids: [k2] })).body;
      expect(appended).toMatchObject({ tool_ids: [a, b, e], ruleset_ids: [r], knowledge_base_ids: [k1, k2] });
    });

    it("validates the body whole and writes nothing when it is bad", async () => {
      const id = await assistant();
      const before = (await admin.get(`/assistants/${id}/runs`)).body.pagination.total_count;
      const body = expectError(
        await run(id, { args: [1], stream: "yes", thread_id: "nope", tool_ids: ["x"] }),
        400,
        "ValidationError",
      );
      expect(body.errors.map((e) => e.path).sort()).toEqual([
        "body.args[0]",
        "body.stream",
        "body.thread_id",
        "body.tool_ids[0]",
      ]);
      expectError(await run(id, "{"), 400, "ValidationError");
      expectError(await run(id, [1]), 400, "ValidationError");
      expect((await admin.get(`/assistants/${id}/runs`)).body.pagination.total_count).toBe(before);
    });

    it("404 for an unknown or another organization's assistant, and nothing is created", async () => {
      expectError(await run(uuid()), 404, "NotFound");
      const id = await assistant();
      expectError(await stranger.post(`/assistants/${id}/runs`, {}), 404, "NotFound");
      expect((await admin.get(`/assistants/${id}/runs`)).body.pagination.total_count).toBe(0);
    });

    it("FAILED when the provider rejects, ERROR when it is unreachable, with status_detail", async () => {
      const id = await assistant();
      model.script({ fail: () => new ModelFailure("failed", "ProviderRejected", "bad request") });
      const failed = await settled((await run(id)).body.assistant_run_id);
      expect(failed).toMatchObject({
        status: "FAILED",
        status_detail: { reason: "ProviderRejected", message: "bad request" },
      });
      model.script({ fail: () => new ModelFailure("error", "ProviderUnavailable", "down") });
      const errored = await settled((await run(id)).body.assistant_run_id);
      expect(errored).toMatchObject({ status: "ERROR", status_detail: { reason: "ProviderUnavailable" } });
      expect(errored.completed_at).not.toBeNull();
    });
  });

  describe("threads", () => {
    it("new_thread creates a thread, and later runs in it see the conversation so far", async () => {
      const id = await assistant();
      model.script({ answer: (m) => `reply to ${m.at(-1)!.content}` });
      const first = (await run(id, { input: "first", new_thread: true })).body;
      expect(first.thread_id).toMatch(/^[0-9a-f-]{36}$/);
      await settled(first.assistant_run_id);
      const second = (await run(id, { input: "second", thread_id: first.thread_id, new_thread: true })).body;
      expect(second.thread_id).toBe(first.thread_id); // thread_id wins over new_thread
      await settled(second.assistant_run_id);
      expect(lastCall()).toEqual([
        { role: "user", content: "first" },
        { role: "assistant", content: "reply to first" },
        { role: "user", content: "second" },
      ]);
      expect((await admin.get(`/threads/${first.thread_id}`)).status).toBe(200);
    });

    it("404 for an unknown or another organization's thread_id", async () => {
      const id = await assistant();
      expectError(await run(id, { thread_id: uuid() }), 404, "NotFound");
      const theirs = (await stranger.post("/threads", { name: "theirs" })).body.thread_id;
      expectError(await run(id, { thread_id: theirs }), 404, "NotFound");
    });

    it("runs one run at a time per thread: a second waits QUEUED until the first ends", async () => {
      const id = await assistant();
      const thread = (await admin.post("/threads", { name: "serial" })).body.thread_id;
      model.script({ hang: true });
      const called = model.whenCalled();
      const first = (await run(id, { thread_id: thread })).body;
      await called;
      model.script({ answer: () => "second done" });
      const second = (await run(id, { thread_id: thread })).body;
      await new Promise((r) => setTimeout(r, 300)); // several worker polls
      expect((await admin.get(`/assistant-runs/${second.assistant_run_id}`)).body.status).toBe("QUEUED");
      await admin.post(`/assistant-runs/${first.assistant_run_id}/cancel`);
      expect((await settled(second.assistant_run_id)).status).toBe("SUCCEEDED");
    });

    it("creates, reads, lists by alias and deletes threads, within the organization", async () => {
      for (const [length, ok] of [
        [0, false],
        [1, true],
        [200, true],
        [201, false],
      ] as const) {
        const res = await admin.post("/threads", { name: "t".repeat(length) });
        if (ok) expect(threadSchema.parse(res.body).name).toHaveLength(length);
        else expectError(res, 400, "ValidationError");
      }
      const alias = `alias-${uuid()}`;
      const t = threadSchema.parse((await admin.post("/threads", { name: "named", alias })).body);
      expect(t.alias).toBe(alias);
      const listed = threadListSchema.parse((await admin.get(`/threads?alias=${alias}`)).body);
      expect(listed.threads.map((x) => x.thread_id)).toEqual([t.thread_id]);
      expectError(await stranger.get(`/threads/${t.thread_id}`), 404, "NotFound");
      expectError(await stranger.delete(`/threads/${t.thread_id}`), 404, "NotFound");
      expect((await admin.delete(`/threads/${t.thread_id}`)).status).toBe(204);
      expectError(await admin.get(`/threads/${t.thread_id}`), 404, "NotFound");
    });
  });

  describe("idempotent create", () => {
    it("the same key twice gives the same run; a different body is 409; no key gives new runs", async () => {
      model.script({ answer: () => "ok" });
      const id = await assistant();
      const key = { "idempotency-key": `key-${uuid()}` };
      const first = await run(id, { input: "x", args: ["a"] }, key);
      const again = await run(id, { args: ["a"], input: "x" }, key);
      expect(first.status).toBe(201);
      expect(again.status).toBe(201);
      expect(again.body.assistant_run_id).toBe(first.body.assistant_run_id);
      expectError(await run(id, { input: "different" }, key), 409, "Conflict");
      expect((await admin.get(`/assistants/${id}/runs`)).body.pagination.total_count).toBe(1);
      const a = (await run(id, { input: "x" })).body.assistant_run_id;
      const b = (await run(id, { input: "x" })).body.assistant_run_id;
      expect(a).not.toBe(b);
    });

    it("20 concurrent creates with one key make one run, and every answer carries it; a different body is 409", async () => {
      model.script({ answer: () => "ok" });
      const id = await assistant();
      const key = { "idempotency-key": `burst-${uuid()}` };
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => run(id, { input: "same", args: ["a", "b"] }, key)),
      );
      expect(answers.map((a) => a.status)).toEqual(Array(20).fill(201));
      const ids = new Set(answers.map((a) => assistantRunSchema.parse(a.body).assistant_run_id));
      expect(ids.size).toBe(1);
      expect((await admin.get(`/assistants/${id}/runs`)).body.pagination.total_count).toBe(1);
      expectError(await run(id, { input: "different" }, key), 409, "Conflict");
      expect((await admin.get(`/assistants/${id}/runs`)).body.pagination.total_count).toBe(1);
    });

    it("keys are per organization", async () => {
      const key = { "idempotency-key": `shared-${uuid()}` };
      const mine = await run(await assistant(), {}, key);
      expect(mine.status).toBe(201);
      const theirAssistant = (await stranger.post("/assistants", { name: "theirs" })).body.assistant_id;
      const theirs = await stranger.post(`/assistants/${theirAssistant}/runs`, {}, key);
      // Another organization's first use of the same key creates its own run (a failed request would not pass).
      expect(theirs.status).toBe(201);
      expect(theirs.body.assistant_run_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(theirs.body.assistant_run_id).not.toBe(mine.body.assistant_run_id);
      expect(theirs.body.assistant_id).toBe(theirAssistant);
      await settled(theirs.body.assistant_run_id, stranger);
    });
  });

  describe("queued cap", () => {
    it("a create past RUN_MAX_QUEUED_PER_ORGANIZATION is 429 RateLimited with Retry-After, and writes nothing", async () => {
      const capped = await startStack(store, {
        inject: { runs: { model } },
        runs: { RUN_MAX_QUEUED_PER_ORGANIZATION: 2 },
      });
      try {
        await runWorker(capped).stop(); // nothing leaves the queue while the test fills it
        const api = apiClient(capped.gatewayUrl, capped.bootstrapKey);
        const id = (await api.post("/assistants", { name: "capped" })).body.assistant_id;
        for (let i = 0; i < 2; i++) expect((await api.post(`/assistants/${id}/runs`, {})).status).toBe(201);
        const threads = (await api.get("/threads")).body.pagination.total_count;
        const refused = await api.post(
          `/assistants/${id}/runs`,
          { new_thread: true },
          { "idempotency-key": `cap-${uuid()}` },
        );
        expectError(refused, 429, "RateLimited");
        expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
        expect((await api.get(`/assistants/${id}/runs`)).body.pagination.total_count).toBe(2);
        expect((await api.get("/threads")).body.pagination.total_count).toBe(threads);
      } finally {
        await capped.close();
      }
    });
  });

  describe("cancel", () => {
    it("cancels a running run: CANCELLED at once, the model call aborted, and it stays CANCELLED", async () => {
      model.script({ hang: true });
      const called = model.whenCalled();
      const r = (await run(await assistant(), { stream: true })).body;
      await called;
      const cancelled = await admin.post(`/assistant-runs/${r.assistant_run_id}/cancel`);
      expect(cancelled.status).toBe(200);
      expect(cancelled.body).toMatchObject({ status: "CANCELLED", status_detail: { reason: "Cancelled" } });
      expect(cancelled.body.completed_at).not.toBeNull();
      await new Promise((resolve) => setTimeout(resolve, 200));
      const later = (await admin.get(`/assistant-runs/${r.assistant_run_id}`)).body;
      expect(later).toEqual(cancelled.body);
      expect(runWorker(stack).inFlight()).toBe(0);
    });

    it("cancels a queued run, and cancelling a terminal run returns it unchanged", async () => {
      const id = await assistant();
      const thread = (await admin.post("/threads", { name: "busy" })).body.thread_id;
      model.script({ hang: true });
      const called = model.whenCalled();
      const holder = (await run(id, { thread_id: thread })).body;
      await called;
      const queued = (await run(id, { thread_id: thread })).body;
      const cancelled = (await admin.post(`/assistant-runs/${queued.assistant_run_id}/cancel`)).body;
      expect(cancelled.status).toBe("CANCELLED");
      const again = await admin.post(`/assistant-runs/${queued.assistant_run_id}/cancel`);
      expect(again.status).toBe(200);
      expect(again.body).toEqual(cancelled);
      await admin.post(`/assistant-runs/${holder.assistant_run_id}/cancel`);
      model.script({ answer: () => "done" });
      const finished = await settled((await run(id)).body.assistant_run_id);
      expect(finished.status).toBe("SUCCEEDED");
      expect((await admin.post(`/assistant-runs/${finished.assistant_run_id}/cancel`)).body).toEqual(finished);
    });

    it("404 for another organization's run", async () => {
      model.script({ answer: () => "ok" });
      const r = (await run(await assistant())).body;
      expectError(await stranger.post(`/assistant-runs/${r.assistant_run_id}/cancel`), 404, "NotFound");
      expectError(await stranger.get(`/assistant-runs/${r.assistant_run_id}`), 404, "NotFound");
      expectError(await admin.get(`/assistant-runs/${uuid()}`), 404, "NotFound");
    });
  });

  describe("ListAssistantRuns", () => {
    let id: string;
    const made: string[] = [];
    beforeAll(async () => {
      id = await assistant();
      model.script({ answer: () => "ok" });
      for (let i = 0; i < 3; i++) made.push((await run(id)).body.assistant_run_id);
      for (const r of made) await settled(r);
      model.script({ fail: () => new ModelFailure("failed", "ProviderRejected", "no") });
      made.push((await run(id)).body.assistant_run_id);
      await settled(made[3]!);
    });

    it("pages newest first", async () => {
      const page = assistantRunListSchema.parse((await admin.get(`/assistants/${id}/runs?page_size=3`)).body);
      expect(page.pagination).toEqual({ page_number: 1, page_size: 3, total_count: 4, total_pages: 2, next_page: 2 });
      expect(page.assistant_runs.map((r) => r.assistant_run_id)).toEqual([...made].reverse().slice(0, 3));
    });

    it("filters by status, comma-separated or repeated", async () => {
      const failed = (await admin.get(`/assistants/${id}/runs?status=FAILED`)).body;
      expect(failed.assistant_runs.map((r: { assistant_run_id: string }) => r.assistant_run_id)).toEqual([made[3]]);
      expect((await admin.get(`/assistants/${id}/runs?status=FAILED,SUCCEEDED`)).body.pagination.total_count).toBe(4);
      expect(
        (await admin.get(`/assistants/${id}/runs?status=FAILED&status=SUCCEEDED`)).body.pagination.total_count,
      ).toBe(4);
      expect((await admin.get(`/assistants/${id}/runs?status=QUEUED`)).body.assistant_runs).toEqual([]);
    });

    it.each(["status=DONE", "status=FAILED,nope", "page_size=0", "page_size=101", "page=0"])(
      "400 for %s",
      async (query) => {
        expectError(await admin.get(`/assistants/${id}/runs?${query}`), 400, "ValidationError");
      },
    );

    it("404 for an unknown or another organization's assistant", async () => {
      expectError(await admin.get(`/assistants/${uuid()}/runs`), 404, "NotFound");
      expectError(await stranger.get(`/assistants/${id}/runs`), 404, "NotFound");
    });

    it("404 once the assistant is deleted; its runs stay readable by id", async () => {
      const gone = await assistant();
      model.script({ answer: () => "ok" });
      const runId = (await run(gone)).body.assistant_run_id;
      await settled(runId);
      expect((await admin.get(`/assistants/${gone}/runs`)).status).toBe(200);
      expect((await admin.delete(`/assistants/${gone}`)).status).toBe(204);
      expectError(await admin.get(`/assistants/${gone}/runs`), 404, "NotFound");
      expect((await admin.get(`/assistant-runs/${runId}`)).body.assistant_run_id).toBe(runId);
    });
  });

  describe("ListAssistantEvents", () => {
    let runId: string;
    beforeAll(async () => {
      model.script({ answer: () => "one two three" });
      runId = (await run(await assistant(), { stream: true, input: "go" })).body.assistant_run_id;
      await settled(runId);
    });

    it("lists the lifecycle and griptape events in order, with offset paging", async () => {
      const all = assistantEventListSchema.parse((await admin.get(`/assistant-runs/${runId}/events`)).body);
      expect(all.events.map((e) => e.type)).toEqual([
        "AssistantRunQueued",
        "AssistantRunStarting",
        "AssistantRunRunning",
        "StartStructureRunEvent",
        "StartPromptEvent",
        "TextChunkEvent",
        "TextChunkEvent",
        "TextChunkEvent",
        "FinishPromptEvent",
        "FinishStructureRunEvent",
        "AssistantRunSucceeded",
      ]);
      expect(all).toMatchObject({ count: 11, total_count: 11, offset: 0, limit: 100, next_offset: 11 });
      const page = (await admin.get(`/assistant-runs/${runId}/events?offset=3&limit=2`)).body;
      expect(page).toMatchObject({ count: 2, offset: 3, limit: 2, next_offset: 5, total_count: 11 });
      expect(page.events.map((e: { event_id: string }) => e.event_id)).toEqual(
        all.events.slice(3, 5).map((e) => e.event_id),
      );
      expect((await admin.get(`/assistant-runs/${runId}/events?offset=11`)).body).toMatchObject({
        count: 0,
        next_offset: 11,
      });
    });

    it("carries ASSISTANT payloads with exactly the griptape keys", async () => {
      const { events } = (await admin.get(`/assistant-runs/${runId}/events`)).body;
      const base = ["type", "id", "timestamp", "meta"];
      const keys: Record<string, string[]> = {
        StartStructureRunEvent: [...base, "structure_id", "input_task_input", "input_task_output"],
        StartPromptEvent: [...base, "model", "prompt_stack"],
        TextChunkEvent: [...base, "index", "token"],
        FinishPromptEvent: [...base, "model", "result", "input_token_count", "output_token_count"],
        FinishStructureRunEvent: [...base, "structure_id", "output_task_input", "output_task_output"],
      };
      const artifactKeys = ["type", "id", "reference", "meta", "name", "value"].sort();
      for (const event of events.filter((e: { origin: string }) => e.origin === "ASSISTANT")) {
        expect(Object.keys(event.payload).sort(), event.type).toEqual(keys[event.type]!.sort());
        expect(event.payload.id).toMatch(/^[0-9a-f]{32}$/);
        expect(event.payload.meta).toEqual({});
        for (const field of ["input_task_input", "output_task_input", "output_task_output"]) {
          if (event.payload[field]) expect(Object.keys(event.payload[field]).sort()).toEqual(artifactKeys);
        }
      }
      const prompt = events.find((e: { type: string }) => e.type === "StartPromptEvent").payload;
      expect(prompt.model).toBe(model.id);
      expect(Object.keys(prompt.prompt_stack).sort()).toEqual(["messages", "type"]);
      expect(Object.keys(prompt.prompt_stack.messages[0]).sort()).toEqual(["content", "role", "type", "usage"]);
      expect(Object.keys(prompt.prompt_stack.messages[0].usage).sort()).toEqual([
        "input_tokens",
        "output_tokens",
        "type",
      ]);
      const lifecycle = events
        .filter((e: { origin: string }) => e.origin === "SYSTEM")
        .map((e: { payload: unknown }) => e.payload);
      expect(lifecycle.at(-1)).toEqual({ status: "SUCCEEDED" });
    });

    it.each(["offset=-1", "offset=x", "limit=0", "limit=1001", "limit=1.5"])("400 for %s", async (query) => {
      expectError(await admin.get(`/assistant-runs/${runId}/events?${query}`), 400, "ValidationError");
    });

    it("404 for another organization's run, or an unknown one", async () => {
      expectError(await stranger.get(`/assistant-runs/${runId}/events`), 404, "NotFound");
      expectError(await admin.get(`/assistant-runs/${uuid()}/events`), 404, "NotFound");
    });
  });
});
