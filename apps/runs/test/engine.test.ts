import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { openAssistantsStore, wireAssistants } from "@loom/assistants/wiring";
import type { Bus } from "@loom/bus/bus";
import { openBus } from "@loom/bus/open";
import { fieldViolationsOf } from "@loom/contracts/errors";
import { newId } from "@loom/contracts/ids";
import { valueToJson } from "@loom/contracts/json-value";
import { terminalLifecycleEvents } from "@loom/contracts/run-lifecycle";
import { openEventsStore, wireEvents } from "@loom/events/wiring";
import { AssistantsService } from "@loom/proto/assistants/v1/assistants_pb";
import { RulesetsService } from "@loom/proto/assistants/v1/rulesets_pb";
import { EventsService, RunKind } from "@loom/proto/events/v1/events_pb";
import { KnowledgeBasesService } from "@loom/proto/knowledge/v1/knowledge_bases_pb";
import { RunStatus, RunsService } from "@loom/proto/runs/v1/runs_pb";
import { ToolsService } from "@loom/proto/tools/v1/tools_pb";
import { headersFor } from "@loom/server/principal";
import { clientFor, inProcessTransport } from "@loom/server/transports";
import { createLogger } from "@loom/telemetry/logger";
import { createScriptedModel } from "@loom/testing/scripted-model";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { within } from "@loom/testing/within";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { executeRun } from "../src/executor.ts";
import type { HistoryWindow } from "../src/history.ts";
import { createRunLog } from "../src/run-log.ts";
import { createRunsService } from "../src/service.ts";
import type { RunsStore } from "../src/store/port.ts";
import { openRunsStore } from "../src/wiring.ts";
import { createRunWorker, type RunWorker } from "../src/worker.ts";

const logger = createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");

const token = "engine-test-token-0123456789";
const principal = { userId: newId(), organizationId: newId() };
const call = { headers: headersFor(principal) };

/**
 * Replicas of the runs service (service + worker) on one store and one bus,
 * with the real assistants and events services in process.
 */
describe.each(storeKinds("run engine"))("run engine (%s store)", (kind) => {
  const db = freshDatabaseName();
  const mongo = { url: kind === "mongo" ? testServers.mongoUrl : undefined };
  let bus: Bus;
  let peers: ReturnType<typeof inProcessTransport>;
  let assistantId: string;
  const workers: RunWorker[] = [];
  const stores: RunsStore[] = [];

  beforeAll(async () => {
    bus = await openBus(testServers.natsUrl, "engine-test");
    // No knowledge base or tool ids here: those services (none behind the transports given) are never asked.
    const assistants = await wireAssistants(await openAssistantsStore({ url: mongo.url, db: `${db}_assistants` }), {
      knowledge: inProcessTransport([], token, logger),
      tools: inProcessTransport([], token, logger),
    });
    const events = await wireEvents(await openEventsStore({ url: mongo.url, db: `${db}_events` }), bus, logger);
    peers = inProcessTransport([assistants, events], token, logger);
    assistantId = (await clientFor(AssistantsService, peers).createAssistant({ name: "engine" }, call)).assistant!
      .assistantId;
  });
  afterEach(async () => {
    for (const w of workers.splice(0)) await w.stop(1_000);
  });
  afterAll(async () => {
    for (const s of stores) await s.close();
    await bus.close();
    if (mongo.url)
      for (const name of [`${db}_assistants`, `${db}_events`, `${db}_runs`]) await dropDatabase(mongo.url, name);
  });

  /**
   * One replica: its own service and worker, and on MongoDB its own connection
   * to the shared database; on SQLite, replicas share the one store (one in-memory database).
   */
  async function replica(
    model: ReturnType<typeof createScriptedModel>,
    options: {
      start?: boolean;
      runTimeoutMs?: number;
      leaseMs?: number;
      maxPerOrganization?: number;
      concurrency?: number;
      maxQueuedPerOrganization?: number;
      idempotencyStallMs?: number;
      /** The events service as this replica reaches it (an empty server: down). */
      events?: ReturnType<typeof inProcessTransport>;
      /** The store as this replica sees it (one that fails some calls). */
      wrap?: (store: RunsStore) => RunsStore;
      historyWindow?: HistoryWindow;
    } = {},
  ) {
    let opened = mongo.url ? undefined : stores[0];
    if (!opened) {
      opened = await openRunsStore({ url: mongo.url, db: `${db}_runs` });
      await opened.init();
      stores.push(opened);
    }
    const store = options.wrap ? options.wrap(opened) : opened;
    const log = createRunLog(clientFor(EventsService, options.events ?? peers));
    const service = createRunsService({
      store,
      assistants: clientFor(AssistantsService, peers),
      rulesets: clientFor(RulesetsService, peers),
      knowledgeBases: clientFor(KnowledgeBasesService, peers),
      tools: clientFor(ToolsService, peers), // no run here names a tool: never asked
      log,
      bus,
      logger,
      maxQueuedPerOrganization: options.maxQueuedPerOrganization ?? 1000,
      idempotencyStallMs: options.idempotencyStallMs,
    });
    const worker = createRunWorker({
      store,
      log,
      model,
      bus,
      logger,
      leaseMs: options.leaseMs ?? 2_000,
      pollMs: 20,
      runTimeoutMs: options.runTimeoutMs ?? 30_000,
      concurrency: options.concurrency ?? 8,
      maxRunningPerOrganization: options.maxPerOrganization ?? 100,
      historyWindow: options.historyWindow ?? { maxMessages: 100, maxTokens: 16_000 },
    });
    workers.push(worker);
    if (options.start !== false) worker.start();
    const runs = createClient(RunsService, inProcessTransport([service], token, logger));
    return { store, log, worker, runs };
  }

  const events = () => clientFor(EventsService, peers);
  /** The run once it has ended; fails the test if it has not within `timeoutMs`. */
  async function settled(
    runs: Awaited<ReturnType<typeof replica>>["runs"],
    id: string,
    timeoutMs = 10_000,
    as: { headers: Record<string, string> } = call,
  ) {
    let run!: NonNullable<Awaited<ReturnType<typeof runs.getAssistantRun>>["assistantRun"]>;
    await vi.waitFor(
      async () => {
        run = (await runs.getAssistantRun({ assistantRunId: id }, as)).assistantRun!;
        expect(run.completedAt, `run ${id} is still ${run.status}`).toBeDefined();
      },
      { timeout: timeoutMs, interval: 20 },
    );
    return run;
  }
  /** The run's event types, once its log has ended (the terminal event follows the terminal status). */
  async function eventTypes(id: string, as: { headers: Record<string, string> } = call) {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const types = (
        await events().listEvents({ runKind: RunKind.ASSISTANT_RUN, runId: id, offset: 0n, limit: 1000 }, as)
      ).events.map((e) => e.type);
      if (terminalLifecycleEvents.has(types.at(-1) ?? "") || Date.now() > deadline) return types;
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  it("two workers on one store execute every run exactly once", async () => {
    const model = createScriptedModel();
    model.script({ answer: () => "ok" });
    const a = await replica(model);
    const b = await replica(model);
    const ids: string[] = [];
    for (let i = 0; i < 30; i++)
      ids.push(
        (await (i % 2 ? a : b).runs.createAssistantRun({ assistantId, input: `run ${i}` }, call)).assistantRun!
          .assistantRunId,
      );
    for (const id of ids) expect((await settled(a.runs, id)).status).toBe(RunStatus.SUCCEEDED);
    const executions = new Map<string, number>();
    for (const messages of model.calls)
      executions.set(messages.at(-1)!.content, (executions.get(messages.at(-1)!.content) ?? 0) + 1);
    expect(executions.size).toBe(30);
    expect([...executions.values()].every((n) => n === 1)).toBe(true);
  });

  it("a run whose worker dies becomes ERROR WorkerLost once its lease runs out", async () => {
    const model = createScriptedModel();
    model.script({ hang: true });
    const dying = await replica(model, { leaseMs: 300 });
    const called = model.whenCalled();
    const id = (await dying.runs.createAssistantRun({ assistantId }, call)).assistantRun!.assistantRunId;
    await called;
    dying.worker.crash();
    const survivor = await replica(model, { leaseMs: 300 });
    const run = await settled(survivor.runs, id);
    expect(run.status).toBe(RunStatus.ERROR);
    expect(run.statusDetail).toMatchObject({ reason: "WorkerLost" });
    expect((await eventTypes(id)).at(-1)).toBe("AssistantRunErrored");
  });

  /**
   * The store with its next QUEUED→STARTING move failing, as a failover or
   * SQLITE_BUSY would make it: a fake, since neither can be made to strike
   * one chosen write of a live store. `landed`: the write happens and only
   * its answer is lost. `releaseFails`: giving the claim back fails too (the
   * store is still down then).
   */
  function failingClaimOnce(how: { landed?: boolean; releaseFails?: boolean } = {}) {
    let armed = true;
    return (store: RunsStore): RunsStore => ({
      ...store,
      async transition(id, guard, to, changes, at) {
        if (!armed || to !== "STARTING") return store.transition(id, guard, to, changes, at);
        armed = false;
        if (how.landed) await store.transition(id, guard, to, changes, at);
        throw Object.assign(new Error("connection reset during the claim"), { code: "ECONNRESET" });
      },
      async releaseClaim(runId) {
        if (how.releaseFails) throw Object.assign(new Error("connection reset"), { code: "ECONNRESET" });
        return store.releaseClaim(runId);
      },
    });
  }

  describe("a claim whose move to STARTING fails", () => {
    it("wedges nothing: the run, the rest of its thread and of its pass all start", async () => {
      const model = createScriptedModel();
      model.script({ answer: () => "ok" });
      const r = await replica(model, { start: false, wrap: failingClaimOnce() });
      const a = await organization();
      const threadId = (await r.runs.createThread({ name: "claims" }, a.headers)).thread!.threadId;
      const ids: string[] = [];
      for (let i = 0; i < 3; i++)
        ids.push(
          (await r.runs.createAssistantRun({ assistantId: a.assistant, threadId, input: `in thread ${i}` }, a.headers))
            .assistantRun!.assistantRunId,
        );
      for (let i = 0; i < 3; i++)
        ids.push(
          (await r.runs.createAssistantRun({ assistantId: a.assistant, input: `alone ${i}` }, a.headers)).assistantRun!
            .assistantRunId,
        );
      r.worker.start();
      for (const id of ids)
        expect((await settled(r.runs, id, 5_000, a.headers)).status, `run ${ids.indexOf(id)}`).toBe(
          RunStatus.SUCCEEDED,
        );
    });

    it("whose write landed but whose answer was lost: the run is executed, not lost with its lease", async () => {
      const model = createScriptedModel();
      model.script({ answer: () => "ok" });
      const r = await replica(model, { start: false, leaseMs: 60_000, wrap: failingClaimOnce({ landed: true }) });
      const a = await organization();
      const ids: string[] = [];
      for (let i = 0; i < 3; i++)
        ids.push(
          (await r.runs.createAssistantRun({ assistantId: a.assistant, input: `run ${i}` }, a.headers)).assistantRun!
            .assistantRunId,
        );
      r.worker.start();
      for (const id of ids)
        expect((await settled(r.runs, id, 5_000, a.headers)).status, `run ${ids.indexOf(id)}`).toBe(
          RunStatus.SUCCEEDED,
        );
    });

    it("and whose claim cannot be given back: the claim lapses after a lease and the run starts", async () => {
      const model = createScriptedModel();
      model.script({ answer: () => "ok" });
      const r = await replica(model, { start: false, leaseMs: 300, wrap: failingClaimOnce({ releaseFails: true }) });
      const a = await organization();
      const id = (await r.runs.createAssistantRun({ assistantId: a.assistant }, a.headers)).assistantRun!
        .assistantRunId;
      r.worker.start();
      expect((await settled(r.runs, id, 5_000, a.headers)).status).toBe(RunStatus.SUCCEEDED);
    });
  });

  /**
   * The events service as a replica reaches it, switched between reachable
   * and not (an empty server: what a client meets while the service is
   * restarting). `dropTerminalOnce`: the next append of a terminal event fails
   * once, the rest pass: a one-call blip, which no real outage can aim at one
   * chosen call (the fault suite kills the real process: faults/events-down).
   */
  function switchableEvents() {
    const down = inProcessTransport([], token, logger);
    let reachable = true;
    let dropTerminal = false;
    const transport: Transport = {
      unary: (method, signal, timeoutMs, header, input, contextValues) => {
        const terminal =
          method.name === "AppendEvents" &&
          (input as { events: { type: string }[] }).events.some((e) => terminalLifecycleEvents.has(e.type));
        if (dropTerminal && terminal) {
          dropTerminal = false;
          return Promise.reject(new ConnectError("connection reset", Code.Unavailable));
        }
        return (reachable ? peers : down).unary(method, signal, timeoutMs, header, input, contextValues);
      },
      stream: (method, signal, timeoutMs, header, input, contextValues) =>
        (reachable ? peers : down).stream(method, signal, timeoutMs, header, input, contextValues),
    };
    return {
      transport,
      set: (up: boolean) => void (reachable = up),
      dropTerminalOnce: () => void (dropTerminal = true),
    };
  }
  /** Follows a run's log to its end (FollowEvents, as an SSE stream does); resolves with the types seen once the stream ends. */
  function follow(id: string, headers: { headers: Record<string, string> }) {
    const types: string[] = [];
    const done = (async () => {
      for await (const res of events().followEvents(
        { runKind: RunKind.ASSISTANT_RUN, runId: id, fromOffset: 0n },
        headers,
      )) {
        if (res.kind.case === "event") types.push(res.kind.value.type);
      }
      return types;
    })();
    return { types, done };
  }

  describe("a run and its thread are one conversation", () => {
    const artifact = (value: string) =>
      JSON.stringify({ type: "TextArtifact", id: newId(), reference: null, meta: {}, name: "n", value });
    /** The thread's messages as the API lists them, their `input` / `output` parsed when JSON. */
    async function messagesOf(r: Awaited<ReturnType<typeof replica>>, threadId: string, headers = call) {
      return (await r.runs.listMessages({ threadId, page: { page: 1, pageSize: 100 } }, headers)).messages;
    }

    it("a run sees the thread's messages as text turns; its own turn is appended as griptape writes one, before its end", async () => {
      const model = createScriptedModel();
      const r = await replica(model);
      const threadId = (
        await r.runs.createThread(
          {
            name: "memory",
            messages: [
              { input: artifact("hello"), output: artifact("hi there") },
              {
                input: "plain text",
                output: JSON.stringify({
                  type: "ListArtifact",
                  value: [JSON.parse(artifact("a")), JSON.parse(artifact("b"))],
                }),
              },
            ],
          },
          call,
        )
      ).thread!.threadId;
      await r.runs.createMessage({ threadId, input: '{"not": "an artifact"}', output: "" }, call);

      const first = (await r.runs.createAssistantRun({ assistantId, threadId, input: "first" }, call)).assistantRun!
        .assistantRunId;
      const stream = follow(first, call);
      await within("the first run's log ends", 10_000, stream.done);
      // The terminal event has arrived: the turn is listed already.
      const listed = await messagesOf(r, threadId);
      expect(listed.map((m) => m.index)).toEqual([0n, 1n, 2n, 3n]);
      const turn = listed[3]!;
      expect(turn.metadata).toEqual({ run_id: first });
      expect(turn.messageId).toBe(first);
      const input = JSON.parse(turn.input);
      const output = JSON.parse(turn.output);
      expect(input).toMatchObject({ type: "TextArtifact", value: "first", reference: null, meta: {} });
      expect(output).toMatchObject({
        type: "TextArtifact",
        value: (await settled(r.runs, first)).output && output.value,
      });
      expect(valueToJson((await settled(r.runs, first)).output)).toEqual(output);
      // The same artifact the run's StartStructureRunEvent shows.
      const start = (
        await events().listEvents({ runKind: RunKind.ASSISTANT_RUN, runId: first, offset: 0n, limit: 100 }, call)
      ).events.find((e) => e.type === "StartStructureRunEvent")!;
      expect((valueToJson(start.payload) as { input_task_input: unknown }).input_task_input).toEqual(input);
      expect((await r.runs.getThread({ threadId }, call)).thread).toMatchObject({ messageCount: 4n });

      const second = (await r.runs.createAssistantRun({ assistantId, threadId, input: "second" }, call)).assistantRun!
        .assistantRunId;
      expect((await settled(r.runs, second)).status).toBe(RunStatus.SUCCEEDED);
      expect((await eventTypes(second)).at(-1)).toBe("AssistantRunSucceeded"); // its turn is listed by then
      expect(model.calls.at(-2)).toEqual([
        { role: "user", content: "hello" },
        { role: "assistant", content: "hi there" },
        { role: "user", content: "plain text" },
        { role: "assistant", content: "a\nb" },
        { role: "user", content: '{"not": "an artifact"}' },
        { role: "assistant", content: "" },
        { role: "user", content: "first" },
      ]);
      expect(model.calls.at(-1)!.slice(-3)).toEqual([
        { role: "user", content: "first" },
        { role: "assistant", content: output.value },
        { role: "user", content: "second" },
      ]);
      // Its StartPromptEvent shows the stored TextArtifacts as they are (id and name), as griptape's memory
      // puts them in a prompt stack; a turn stored as anything else gets an artifact of its own.
      const prompt = (
        await events().listEvents({ runKind: RunKind.ASSISTANT_RUN, runId: second, offset: 0n, limit: 100 }, call)
      ).events.find((e) => e.type === "StartPromptEvent")!;
      const artifacts = (
        valueToJson(prompt.payload) as { prompt_stack: { messages: Array<{ content: Array<{ artifact: object }> }> } }
      ).prompt_stack.messages.map((m) => m.content[0]!.artifact);
      const stored = (await messagesOf(r, threadId)).slice(0, 4);
      expect(artifacts[0]).toEqual(JSON.parse(stored[0]!.input));
      expect(artifacts[1]).toEqual(JSON.parse(stored[0]!.output));
      expect(artifacts[2]).toMatchObject({
        type: "TextArtifact",
        value: "plain text",
        id: expect.stringMatching(/^[0-9a-f]{32}$/),
      });
      expect(artifacts.slice(6, 8)).toEqual([input, output]);
      expect(artifacts[8]).toMatchObject({ value: "second", id: expect.not.stringMatching(input.id) });
      expect((await messagesOf(r, threadId)).map((m) => m.metadata)).toEqual([
        {},
        {},
        {},
        { run_id: first },
        { run_id: second },
      ]);
    });

    it("thread and message RPCs refuse bodies out of bounds with their paths, and another organization's are NOT_FOUND", async () => {
      const r = await replica(createScriptedModel(), { start: false });
      const violations = async (call: Promise<unknown>) => {
        const error = ConnectError.from(
          await call.then(
            () => new Error("accepted"),
            (e: unknown) => e,
          ),
        );
        expect(error.code).toBe(Code.InvalidArgument);
        return fieldViolationsOf(error).map((v) => v.path);
      };
      expect(await violations(r.runs.createThread({ name: "t".repeat(201) }, call))).toEqual(["body.name"]);
      const long = "x".repeat(1024 * 1024 + 1);
      expect(
        await violations(
          r.runs.createThread(
            {
              name: "t",
              messages: [
                { input: "", output: "" },
                { input: long, output: long },
              ],
            },
            call,
          ),
        ),
      ).toEqual(["body.messages[1].input", "body.messages[1].output"]);
      const many = Array.from({ length: 1001 }, () => ({ input: "", output: "" }));
      expect(await violations(r.runs.createThread({ name: "t", messages: many }, call))).toEqual(["body.messages"]);
      const threadId = (
        await r.runs.createThread({ name: "t".repeat(200), messages: [{ input: "", output: "" }] }, call)
      ).thread!.threadId;
      expect(
        await violations(r.runs.updateThread({ threadId, messages: { values: [{ input: long, output: "" }] } }, call)),
      ).toEqual(["body.messages[0].input"]);
      expect(await violations(r.runs.createMessage({ threadId, input: "", output: long }, call))).toEqual([
        "body.output",
      ]);
      expect(await violations(r.runs.updateMessage({ messageId: newId(), input: long }, call))).toEqual(["body.input"]);
      const listed = (await r.runs.listMessages({ threadId, page: { page: 1, pageSize: 10 } }, call)).messages;
      expect(listed).toHaveLength(1); // nothing of the refused bodies stored
      expect((await r.runs.getThread({ threadId }, call)).thread).toMatchObject({ metadata: {}, messageCount: 1n });

      const stranger = await organization();
      const messageId = listed[0]!.messageId;
      for (const refused of [
        () => r.runs.updateThread({ threadId, name: "theirs" }, stranger.headers),
        () => r.runs.createMessage({ threadId, input: "", output: "" }, stranger.headers),
        () => r.runs.listMessages({ threadId, page: { page: 1, pageSize: 10 } }, stranger.headers),
        () => r.runs.getMessage({ messageId }, stranger.headers),
        () => r.runs.updateMessage({ messageId, input: "theirs" }, stranger.headers),
        () => r.runs.deleteMessage({ messageId }, stranger.headers),
      ])
        await expect(refused()).rejects.toMatchObject({ code: Code.NotFound });
      expect((await r.runs.getMessage({ messageId }, call)).message).toMatchObject({ input: "", index: 0n });
    });

    it("the window keeps the newest messages: at most THREAD_HISTORY_MAX_MESSAGES, about THREAD_HISTORY_MAX_TOKENS", async () => {
      const model = createScriptedModel();
      const r = await replica(model, { historyWindow: { maxMessages: 3, maxTokens: 10 } }); // 10 tokens: 40 characters
      const seen = async (messages: Array<{ input: string; output: string }>) => {
        const threadId = (await r.runs.createThread({ name: "window", messages }, call)).thread!.threadId;
        const id = (await r.runs.createAssistantRun({ assistantId, threadId, input: "now" }, call)).assistantRun!
          .assistantRunId;
        await settled(r.runs, id);
        return model.calls
          .at(-1)!
          .filter((t) => t.role === "user")
          .map((t) => t.content);
      };
      // By count: the three newest of four.
      expect(await seen(["m0", "m1", "m2", "m3"].map((m) => ({ input: m, output: "ok" })))).toEqual([
        "m1",
        "m2",
        "m3",
        "now",
      ]);
      // By tokens: m1's 30 characters would pass the 40 with m2's and m3's 12 each; it goes, and m0 with it.
      expect(
        await seen([
          { input: "m0", output: "" },
          { input: "m1", output: "x".repeat(28) },
          { input: "m2", output: "x".repeat(10) },
          { input: "m3", output: "x".repeat(10) },
        ]),
      ).toEqual(["m2", "m3", "now"]);
    });

    it.skipIf(kind !== "mongo")(
      "a turn whose append fails keeps the thread; the sweep appends it, then the end, then the next run sees it (MongoDB only: SQLite appends in the move's transaction)",
      async () => {
        const model = createScriptedModel();
        let failures = 1;
        const r = await replica(model, {
          wrap: (store) => ({
            ...store,
            async appendRunMessage(run) {
              if (failures > 0) {
                failures--;
                throw Object.assign(new Error("connection reset"), { code: "ECONNRESET" });
              }
              return store.appendRunMessage(run);
            },
          }),
        });
        const threadId = (await r.runs.createThread({ name: "crash" }, call)).thread!.threadId;
        const first = (await r.runs.createAssistantRun({ assistantId, threadId, input: "first" }, call)).assistantRun!
          .assistantRunId;
        const second = (await r.runs.createAssistantRun({ assistantId, threadId, input: "second" }, call)).assistantRun!
          .assistantRunId;
        expect((await settled(r.runs, second)).status).toBe(RunStatus.SUCCEEDED);
        expect((await eventTypes(second)).at(-1)).toBe("AssistantRunSucceeded");
        expect(failures).toBe(0); // the first append did fail
        expect(
          model.calls
            .at(-1)!
            .map((t) => t.content)
            .slice(0, 1),
        ).toEqual(["first"]);
        expect((await messagesOf(r, threadId)).map((m) => [m.index, m.metadata])).toEqual([
          [0n, { run_id: first }],
          [1n, { run_id: second }],
        ]);
        expect((await r.runs.getThread({ threadId }, call)).thread).toMatchObject({ messageCount: 2n });
        expect((await eventTypes(first)).at(-1)).toBe("AssistantRunSucceeded");
      },
    );
  });

  describe("a run's terminal event that cannot be written at once", () => {
    it("a blip: the append is retried and the log ends with the run", async () => {
      const model = createScriptedModel();
      model.script({ answer: () => "ok" });
      const link = switchableEvents();
      const r = await replica(model, { events: link.transport });
      const a = await organization();
      link.dropTerminalOnce();
      const id = (await r.runs.createAssistantRun({ assistantId: a.assistant }, a.headers)).assistantRun!
        .assistantRunId;
      const stream = follow(id, a.headers);
      expect((await settled(r.runs, id, 5_000, a.headers)).status).toBe(RunStatus.SUCCEEDED);
      expect((await within("the stream ends", 3_000, stream.done)).at(-1)).toBe("AssistantRunSucceeded");
    });

    it("events away for longer than the retries: the sweep writes the end once it is back, and streams end", async () => {
      const model = createScriptedModel();
      model.script({ hang: true });
      const link = switchableEvents();
      const r = await replica(model, { events: link.transport, runTimeoutMs: 300 });
      const a = await organization();
      const called = model.whenCalled();
      const id = (await r.runs.createAssistantRun({ assistantId: a.assistant }, a.headers)).assistantRun!
        .assistantRunId;
      await called;
      const stream = follow(id, a.headers);
      link.set(false); // the run times out while events is away: its end cannot be written
      expect((await settled(r.runs, id, 5_000, a.headers)).statusDetail).toMatchObject({ reason: "Timeout" });
      await new Promise((res) => setTimeout(res, 2_500)); // past the retries and a few sweeps
      expect(stream.types.at(-1)).toBe("StartPromptEvent"); // still open: no end yet
      link.set(true);
      const back = Date.now();
      expect((await within("the stream ends", 5_000, stream.done)).at(-1)).toBe("AssistantRunErrored");
      expect(Date.now() - back).toBeLessThan(3_500); // within the sweep's grace and interval
    });

    it("a cancel while events is away answers CANCELLED, stops the worker, and its end is written once events is back", async () => {
      const model = createScriptedModel();
      model.script({ hang: true });
      const link = switchableEvents();
      const executing = await replica(model, { events: link.transport });
      const front = await replica(model, { start: false, events: link.transport }); // takes the cancel, sweeps nothing
      const a = await organization();
      const called = model.whenCalled();
      const id = (await executing.runs.createAssistantRun({ assistantId: a.assistant, stream: true }, a.headers))
        .assistantRun!.assistantRunId;
      await called;
      const stream = follow(id, a.headers);
      link.set(false);
      expect((await front.runs.cancelAssistantRun({ assistantRunId: id }, a.headers)).assistantRun!.status).toBe(
        RunStatus.CANCELLED,
      );
      await vi.waitFor(() => expect(executing.worker.inFlight()).toBe(0), { timeout: 5_000 });
      link.set(true);
      // A retried cancel converges at once; the sweep would too, a little later.
      expect((await front.runs.cancelAssistantRun({ assistantRunId: id }, a.headers)).assistantRun!.status).toBe(
        RunStatus.CANCELLED,
      );
      expect((await within("the stream ends", 1_000, stream.done)).at(-1)).toBe("AssistantRunCancelled");
      expect((await eventTypes(id, a.headers)).filter((t) => t === "AssistantRunCancelled")).toHaveLength(1);
    });
  });

  it("reaps every run whose lease ran out in one sweep, however many", async () => {
    const model = createScriptedModel();
    const count = 120; // more than the fifty a sweep took before
    const front = await replica(model, { start: false });
    const a = await organization();
    const ids: string[] = [];
    await inBatches(count, async (i) =>
      ids.push(
        (await front.runs.createAssistantRun({ assistantId: a.assistant, input: `run ${i}` }, a.headers)).assistantRun!
          .assistantRunId,
      ),
    );
    // Left RUNNING by a worker that is gone, its leases run out (as a crashed worker's do, without a live
    // worker renewing 120 leases against a shared FerretDB while the test sets up).
    const at = new Date();
    await inBatches(count, async (i) => {
      expect(await front.store.claimRun(ids[i]!, "gone", at)).toBe(true);
      await front.store.transition(
        ids[i]!,
        { from: ["QUEUED"] },
        "STARTING",
        { worker: "gone", leaseUntil: new Date(at.getTime() - 1) },
        at,
      );
      expect(
        await front.store.transition(ids[i]!, { from: ["STARTING"], worker: "gone" }, "RUNNING", {}, at),
      ).toMatchObject({ status: "RUNNING" });
    });
    // A survivor whose own lease is long: before, it swept every half lease (5 minutes here), fifty runs a sweep.
    const survivor = await replica(model, { leaseMs: 600_000 });
    const started = Date.now();
    const ended = async () =>
      (
        await survivor.runs.listAssistantRuns(
          { assistantId: a.assistant, statuses: [RunStatus.ERROR], page: { page: 1, pageSize: 1 } },
          a.headers,
        )
      ).page!.totalCount;
    // A reap is a few writes and an append: ~8 round trips, slow on a FerretDB shared by busy suites.
    await vi.waitFor(async () => expect(await ended()).toBe(BigInt(count)), {
      timeout: kind === "mongo" ? 45_000 : 5_000,
      interval: 100,
    });
    console.log(`reaped ${count} lost runs ${Date.now() - started} ms after the survivor started (${kind})`);
    const runs = await Promise.all(ids.map((id) => survivor.runs.getAssistantRun({ assistantRunId: id }, a.headers)));
    expect(
      runs.every((x) => (x.assistantRun!.statusDetail as { reason?: string } | undefined)?.reason === "WorkerLost"),
    ).toBe(true);
  }, 90_000);

  it("a run over RUN_TIMEOUT becomes ERROR Timeout", async () => {
    const model = createScriptedModel();
    model.script({ hang: true });
    const r = await replica(model, { runTimeoutMs: 200 });
    const id = (await r.runs.createAssistantRun({ assistantId }, call)).assistantRun!.assistantRunId;
    const run = await settled(r.runs, id);
    expect(run.status).toBe(RunStatus.ERROR);
    expect(run.statusDetail).toMatchObject({ reason: "Timeout" });
  });

  it("cancel reaches the worker on another replica and aborts the model call within 5 seconds", async () => {
    const model = createScriptedModel();
    model.script({ hang: true });
    const executing = await replica(model);
    const front = await replica(model, { start: false }); // takes the cancel request, runs nothing
    const called = model.whenCalled();
    const id = (await executing.runs.createAssistantRun({ assistantId, stream: true }, call)).assistantRun!
      .assistantRunId;
    await called;
    const started = Date.now();
    const cancelled = (await front.runs.cancelAssistantRun({ assistantRunId: id }, call)).assistantRun!;
    expect(cancelled.status).toBe(RunStatus.CANCELLED);
    while (executing.worker.inFlight() > 0 && Date.now() - started < 5_000) await new Promise((r) => setTimeout(r, 10));
    expect(executing.worker.inFlight()).toBe(0);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect((await settled(executing.runs, id)).status).toBe(RunStatus.CANCELLED);
    expect((await eventTypes(id)).at(-1)).toBe("AssistantRunCancelled");
  });

  it("a cancel while STARTING wins: the worker's next write changes nothing", async () => {
    const model = createScriptedModel();
    model.script({ answer: () => "too late" });
    const r = await replica(model, { start: false });
    const id = (await r.runs.createAssistantRun({ assistantId }, call)).assistantRun!.assistantRunId;
    const at = new Date();
    expect(await r.store.claimRun(id, "slow-worker", at)).toBe(true);
    const starting = (await r.store.transition(
      id,
      { from: ["QUEUED"] },
      "STARTING",
      { worker: "slow-worker", leaseUntil: new Date(at.getTime() + 60_000) },
      at,
    ))!;
    expect((await r.runs.cancelAssistantRun({ assistantRunId: id }, call)).assistantRun!.status).toBe(
      RunStatus.CANCELLED,
    );
    await executeRun(starting, new AbortController().signal, {
      store: r.store,
      log: r.log,
      model,
      logger,
      workerId: "slow-worker",
      historyWindow: { maxMessages: 100, maxTokens: 16_000 },
      now: () => new Date(),
    });
    const run = (await r.runs.getAssistantRun({ assistantRunId: id }, call)).assistantRun!;
    expect(run.status).toBe(RunStatus.CANCELLED);
    expect(run.output).toBeUndefined();
    expect(model.calls).toHaveLength(0);
  });

  it("a model answer that arrives after a cancel does not overwrite CANCELLED", async () => {
    const model = createScriptedModel();
    // Ignores the abort and answers late, as a provider that does not honor it would.
    const slow = {
      ...model,
      generate: async () => (
        await new Promise((r) => setTimeout(r, 200)), { text: "late", inputTokens: 1, outputTokens: 1 }
      ),
    };
    const r = await replica(slow as unknown as ReturnType<typeof createScriptedModel>);
    const id = (await r.runs.createAssistantRun({ assistantId }, call)).assistantRun!.assistantRunId;
    while ((await r.runs.getAssistantRun({ assistantRunId: id }, call)).assistantRun!.status !== RunStatus.RUNNING)
      await new Promise((res) => setTimeout(res, 5));
    await r.runs.cancelAssistantRun({ assistantRunId: id }, call);
    await new Promise((res) => setTimeout(res, 400));
    const run = (await r.runs.getAssistantRun({ assistantRunId: id }, call)).assistantRun!;
    expect(run.status).toBe(RunStatus.CANCELLED);
    expect(run.output).toBeUndefined();
    const types = await eventTypes(id);
    expect(types).not.toContain("AssistantRunSucceeded");
    expect(types).not.toContain("FinishStructureRunEvent");
    expect(types.at(-1)).toBe("AssistantRunCancelled");
  });

  it("holds an organization to its cap of executing runs; the next starts when one ends", async () => {
    const model = createScriptedModel();
    model.script({ hang: true });
    const r = await replica(model, { maxPerOrganization: 1 });
    const called = model.whenCalled();
    const first = (await r.runs.createAssistantRun({ assistantId }, call)).assistantRun!.assistantRunId;
    await called;
    const second = (await r.runs.createAssistantRun({ assistantId }, call)).assistantRun!.assistantRunId;
    await new Promise((res) => setTimeout(res, 200)); // ten worker polls
    expect((await r.runs.getAssistantRun({ assistantRunId: second }, call)).assistantRun!.status).toBe(
      RunStatus.QUEUED,
    );
    model.script({ answer: () => "second" });
    await r.runs.cancelAssistantRun({ assistantRunId: first }, call);
    expect((await settled(r.runs, second)).status).toBe(RunStatus.SUCCEEDED);
  });

  it("a worker woken while it is full claims the queued run once a slot frees", async () => {
    const model = createScriptedModel();
    model.script({ hang: true });
    const r = await replica(model, { concurrency: 1 });
    const called = model.whenCalled();
    const first = (await r.runs.createAssistantRun({ assistantId }, call)).assistantRun!.assistantRunId;
    await called;
    // Created while the worker is full: its wake-up and ten polls find no free slot.
    const second = (await r.runs.createAssistantRun({ assistantId }, call)).assistantRun!.assistantRunId;
    await new Promise((res) => setTimeout(res, 200));
    model.script({ answer: () => "second" });
    await r.runs.cancelAssistantRun({ assistantRunId: first }, call);
    expect((await settled(r.runs, second)).status).toBe(RunStatus.SUCCEEDED);
  });

  it("every legal path writes its lifecycle events in order", async () => {
    const model = createScriptedModel();
    model.script({ answer: () => "fine" });
    const r = await replica(model);
    const ok = (await r.runs.createAssistantRun({ assistantId }, call)).assistantRun!.assistantRunId;
    await settled(r.runs, ok);
    const lifecycle = (await eventTypes(ok)).filter((t) => t.startsWith("AssistantRun"));
    expect(lifecycle).toEqual([
      "AssistantRunQueued",
      "AssistantRunStarting",
      "AssistantRunRunning",
      "AssistantRunSucceeded",
    ]);
    await r.worker.stop();
    const queued = (await r.runs.createAssistantRun({ assistantId }, call)).assistantRun!.assistantRunId;
    await r.runs.cancelAssistantRun({ assistantRunId: queued }, call);
    expect(await eventTypes(queued)).toEqual(["AssistantRunQueued", "AssistantRunCancelled"]);
  });

  /** A model that never answers a message starting with "slow" (until aborted) and answers every other at once. */
  function slowForSome() {
    return {
      id: "test:slow-for-some",
      async generate(req: { messages: { content: string }[]; signal: AbortSignal }) {
        const text = req.messages.at(-1)!.content;
        if (text.startsWith("slow")) {
          await new Promise((_, reject) =>
            req.signal.addEventListener("abort", () => reject(req.signal.reason), { once: true }),
          );
        }
        return { text: `answer to ${text}`, inputTokens: 1, outputTokens: 1 };
      },
    } as unknown as ReturnType<typeof createScriptedModel>;
  }
  /** An organization of its own with an assistant, so its queue is its own. */
  async function organization() {
    const who = { userId: newId(), organizationId: newId() };
    const headers = { headers: headersFor(who) };
    const assistant = (await clientFor(AssistantsService, peers).createAssistant({ name: "org" }, headers)).assistant!
      .assistantId;
    return { headers, assistant, organizationId: who.organizationId };
  }
  /** `n` calls, ten at a time (a hundred creates one by one take seconds on FerretDB). */
  async function inBatches(n: number, call: (i: number) => Promise<unknown>) {
    for (let i = 0; i < n; i += 10)
      await Promise.all(Array.from({ length: Math.min(10, n - i) }, (_, j) => call(i + j)));
  }
  async function cancelAll(
    runs: Awaited<ReturnType<typeof replica>>["runs"],
    headers: { headers: Record<string, string> },
    ids: string[],
  ) {
    await inBatches(ids.length, (i) => runs.cancelAssistantRun({ assistantRunId: ids[i]! }, headers));
  }
  const queuedOf = async (
    runs: Awaited<ReturnType<typeof replica>>["runs"],
    org: { assistant: string; headers: { headers: Record<string, string> } },
  ) =>
    (await runs.listAssistantRuns({ assistantId: org.assistant, statuses: [RunStatus.QUEUED] }, org.headers)).page!
      .totalCount;
  /**
   * The slow runs never end on their own, so a starved run would never start:
   * the bound only has to outlast a slow machine (FerretDB under a loaded CI
   * took over 2 s once), not to be tight.
   */
  const fairnessBoundMs = 10_000;

  async function succeededWithin(
    runs: Awaited<ReturnType<typeof replica>>["runs"],
    headers: { headers: Record<string, string> },
    id: string,
    ms: number,
  ) {
    const deadline = Date.now() + ms;
    for (;;) {
      const run = (await runs.getAssistantRun({ assistantRunId: id }, headers)).assistantRun!;
      if (run.status === RunStatus.SUCCEEDED || run.completedAt || Date.now() > deadline) return run.status;
      await new Promise((res) => setTimeout(res, 10));
    }
  }

  it("an organization at its cap with 100 queued runs does not hold up another organization's run", async () => {
    const r = await replica(slowForSome(), { maxPerOrganization: 1 });
    const a = await organization();
    const b = await organization();
    const queuedA: string[] = [];
    await inBatches(100, async (i) =>
      queuedA.push(
        (await r.runs.createAssistantRun({ assistantId: a.assistant, input: `slow ${i}` }, a.headers)).assistantRun!
          .assistantRunId,
      ),
    );
    const runB = (await r.runs.createAssistantRun({ assistantId: b.assistant, input: "quick" }, b.headers))
      .assistantRun!.assistantRunId;
    expect(await succeededWithin(r.runs, b.headers, runB, fairnessBoundMs)).toBe(RunStatus.SUCCEEDED);
    expect(await queuedOf(r.runs, a)).toBe(99n); // A's first runs, the rest wait for it
    await cancelAll(r.runs, a.headers, queuedA);
  }, 60_000);

  it("a thread with 100 queued runs does not hold up a run outside it, of the same organization", async () => {
    const r = await replica(slowForSome(), { maxPerOrganization: 100 });
    const a = await organization();
    const threadId = (await r.runs.createThread({ name: "busy" }, a.headers)).thread!.threadId;
    const inThread: string[] = [];
    await inBatches(100, async (i) =>
      inThread.push(
        (await r.runs.createAssistantRun({ assistantId: a.assistant, threadId, input: `slow ${i}` }, a.headers))
          .assistantRun!.assistantRunId,
      ),
    );
    const outside = (await r.runs.createAssistantRun({ assistantId: a.assistant, input: "quick" }, a.headers))
      .assistantRun!.assistantRunId;
    expect(await succeededWithin(r.runs, a.headers, outside, fairnessBoundMs)).toBe(RunStatus.SUCCEEDED);
    expect(await queuedOf(r.runs, a)).toBe(99n); // the thread's first runs, the rest wait for it
    await cancelAll(r.runs, a.headers, inThread);
  }, 60_000);

  it("refuses a create past the organization's queued cap and writes nothing", async () => {
    const model = createScriptedModel();
    const r = await replica(model, { start: false, maxQueuedPerOrganization: 3 });
    const a = await organization();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push((await r.runs.createAssistantRun({ assistantId: a.assistant }, a.headers)).assistantRun!.assistantRunId);
    const threadsBefore = (await r.runs.listThreads({}, a.headers)).page!.totalCount;
    await expect(
      r.runs.createAssistantRun({ assistantId: a.assistant, newThread: true }, a.headers),
    ).rejects.toMatchObject({ code: Code.ResourceExhausted });
    expect((await r.runs.listAssistantRuns({ assistantId: a.assistant }, a.headers)).page!.totalCount).toBe(3n);
    expect((await r.runs.listThreads({}, a.headers)).page!.totalCount).toBe(threadsBefore);
    await r.runs.cancelAssistantRun({ assistantRunId: ids[0]! }, a.headers);
    expect((await r.runs.createAssistantRun({ assistantId: a.assistant }, a.headers)).assistantRun!.status).toBe(
      RunStatus.QUEUED,
    );
    await cancelAll(r.runs, a.headers, ids);
  });

  it("concurrent creates never take an organization past its queued cap; the refused ones leave no run or thread", async () => {
    const model = createScriptedModel();
    const cap = 5;
    // Two replicas on one store, as the gateway spreads creates over them.
    const replicas = [
      await replica(model, { start: false, maxQueuedPerOrganization: cap }),
      await replica(model, { start: false, maxQueuedPerOrganization: cap }),
    ];
    const a = await organization();
    const answers = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        replicas[i % 2]!.runs.createAssistantRun(
          { assistantId: a.assistant, newThread: true, input: `run ${i}` },
          a.headers,
        ),
      ),
    );
    const created = answers.flatMap((x) => (x.status === "fulfilled" ? [x.value.assistantRun!.assistantRunId] : []));
    const refused = answers.flatMap((x) => (x.status === "rejected" ? [(x.reason as ConnectError).code] : []));
    expect(created).toHaveLength(cap);
    expect(refused).toEqual(Array.from({ length: 20 - cap }, () => Code.ResourceExhausted));
    expect(await queuedOf(replicas[0]!.runs, a)).toBe(BigInt(cap));
    expect((await replicas[0]!.runs.listThreads({}, a.headers)).page!.totalCount).toBe(BigInt(cap));
    // A place frees when a run leaves the queue.
    await replicas[0]!.runs.cancelAssistantRun({ assistantRunId: created[0]! }, a.headers);
    const next = (await replicas[1]!.runs.createAssistantRun({ assistantId: a.assistant }, a.headers)).assistantRun!
      .assistantRunId;
    await expect(replicas[1]!.runs.createAssistantRun({ assistantId: a.assistant }, a.headers)).rejects.toMatchObject({
      code: Code.ResourceExhausted,
    });
    await cancelAll(replicas[0]!.runs, a.headers, [...created, next]);
  });

  it("with the events service down, a create answers UNAVAILABLE and leaves no run", async () => {
    const model = createScriptedModel();
    const r = await replica(model, { start: false, events: inProcessTransport([], token, logger) });
    const a = await organization();
    const failing = r.runs.createAssistantRun({ assistantId: a.assistant, newThread: true }, a.headers);
    await expect(failing).rejects.toMatchObject({ code: Code.Unavailable });
    const keyed = r.runs.createAssistantRun(
      { assistantId: a.assistant, idempotencyKey: "k-down", requestFingerprint: "f" },
      a.headers,
    );
    await expect(keyed).rejects.toMatchObject({ code: Code.Unavailable });
    expect((await r.runs.listAssistantRuns({ assistantId: a.assistant }, a.headers)).page!.totalCount).toBe(0n);
    expect((await r.runs.listThreads({}, a.headers)).page!.totalCount).toBe(0n);
    expect(await r.store.countQueued(a.organizationId)).toBe(0);
    // The key was freed: once the events service is back, the retry creates the run.
    const up = await replica(model, { start: false });
    const created = (
      await up.runs.createAssistantRun(
        { assistantId: a.assistant, idempotencyKey: "k-down", requestFingerprint: "f" },
        a.headers,
      )
    ).assistantRun!;
    expect(created.status).toBe(RunStatus.QUEUED);
    await cancelAll(up.runs, a.headers, [created.assistantRunId]);
  });

  it("a keyed create whose first request died before storing its run is taken over, once, under the recorded id", async () => {
    const model = createScriptedModel();
    const r = await replica(model, { start: false, idempotencyStallMs: 200 });
    const a = await organization();
    // The first request recorded the key and wrote the run's first event, then died.
    const runId = newId();
    const at = new Date();
    await r.store.putIdempotency({
      organizationId: a.organizationId,
      key: "k-died",
      fingerprint: "f",
      runId,
      createdAt: at,
      attempt: 0,
      attemptAt: at,
    });
    await r.log.lifecycle({ id: runId, status: "QUEUED", organizationId: a.organizationId, createdBy: "u" } as never);
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        r.runs.createAssistantRun(
          { assistantId: a.assistant, idempotencyKey: "k-died", requestFingerprint: "f" },
          a.headers,
        ),
      ),
    );
    expect(new Set(answers.map((x) => x.assistantRun!.assistantRunId))).toEqual(new Set([runId]));
    expect((await r.runs.listAssistantRuns({ assistantId: a.assistant }, a.headers)).page!.totalCount).toBe(1n);
    const types = (
      await events().listEvents({ runKind: RunKind.ASSISTANT_RUN, runId, offset: 0n, limit: 100 }, a.headers)
    ).events.map((e) => e.type);
    expect(types).toEqual(["AssistantRunQueued"]);
    await cancelAll(r.runs, a.headers, [runId]);
  });

  it("20 concurrent creates with one Idempotency-Key make one run; a different request is refused", async () => {
    const model = createScriptedModel();
    const r = await replica(model, { start: false });
    const a = await organization();
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        r.runs.createAssistantRun(
          { assistantId: a.assistant, idempotencyKey: "k-20", requestFingerprint: "same" },
          a.headers,
        ),
      ),
    );
    const ids = new Set(answers.map((x) => x.assistantRun!.assistantRunId));
    expect(ids.size).toBe(1);
    expect((await r.runs.listAssistantRuns({ assistantId: a.assistant }, a.headers)).page!.totalCount).toBe(1n);
    await expect(
      r.runs.createAssistantRun(
        { assistantId: a.assistant, idempotencyKey: "k-20", requestFingerprint: "other" },
        a.headers,
      ),
    ).rejects.toMatchObject({
      code: Code.AlreadyExists,
    });
    await cancelAll(r.runs, a.headers, [...ids]);
  });
});
