import { createMemoryBus } from "@loom/bus/memory";
import { newId } from "@loom/contracts/ids";
import { valueToJson } from "@loom/contracts/json-value";
import { openEventsStore, wireEvents } from "@loom/events/wiring";
import { EventsService, RunKind } from "@loom/proto/events/v1/events_pb";
import { headersFor } from "@loom/server/principal";
import { clientFor, inProcessTransport } from "@loom/server/transports";
import { createLogger } from "@loom/telemetry/logger";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decideApprovals } from "../src/approvals/decide.ts";
import { pauseRun } from "../src/approvals/pause.ts";
import { createRunLog, type RunLog } from "../src/run-log.ts";
import type { PendingApproval } from "../src/store/pending-approval.ts";
import type { RunsStore } from "../src/store/port.ts";
import type { RunRecord } from "../src/store/run-records.ts";
import { openRunsStore } from "../src/wiring.ts";
import { createSweep } from "../src/worker/sweep.ts";

const logger = createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");
const token = "approval-crash-test-token-0123456789";

/**
 * The crash windows of approval (docs/decisions.md, "Approval of tool
 * calls"): a process that dies between a pause or a decision and its SYSTEM
 * event, or between the last decision and the re-queue, leaves a state the
 * sweep finishes: each event once, in order, and the run back in the queue
 * without waiting for its deadline. Each crash is the real code path with the
 * write after it failing as a dead process's would; the sweep is the real one
 * on the real store and events service.
 */
describe.each(storeKinds("approval crash windows"))("approval crash windows (%s store)", (kind) => {
  const db = freshDatabaseName();
  const mongoUrl = kind === "mongo" ? testServers.mongoUrl : undefined;
  const principal = { userId: newId(), organizationId: newId() };
  let store: RunsStore;
  let log: RunLog;
  let events: ReturnType<typeof clientFor<typeof EventsService>>;
  let clock = Date.parse("2026-03-01T00:00:00.000Z");
  const now = () => new Date(clock);
  /** Past the sweep's grace for a writer still at work (2 s). */
  const pastGrace = () => (clock += 3_000);
  let sweep: () => Promise<void>;

  beforeAll(async () => {
    const eventsService = await wireEvents(await openEventsStore({ url: mongoUrl, db: `${db}_events` }));
    events = clientFor(EventsService, inProcessTransport([eventsService], token, logger));
    log = createRunLog(events, now);
    store = await openRunsStore({ url: mongoUrl, db: `${db}_runs` });
    await store.init();
    sweep = createSweep({ store, log, logger, now, lostFound: () => {} });
  });
  afterAll(async () => {
    await store?.close();
    if (mongoUrl) for (const name of [`${db}_events`, `${db}_runs`]) await dropDatabase(mongoUrl, name);
  });

  /** A run log whose SYSTEM events never get written: the process died before (or while) writing them. */
  const crashingLog = (): RunLog => ({
    ...log,
    system: async () => {
      throw new Error("the process died here");
    },
  });

  /** A run held by worker w1, RUNNING, its start in its log. */
  async function runningRun(): Promise<RunRecord> {
    const at = now();
    const run: RunRecord = {
      id: newId(),
      organizationId: principal.organizationId,
      assistantId: newId(),
      args: [],
      message: "Add 20 and 22",
      stream: false,
      status: "QUEUED",
      knowledgeBaseIds: [],
      retrieverIds: [],
      rulesetIds: [],
      structureIds: [],
      toolIds: [],
      createdBy: principal.userId,
      createdAt: at,
      updatedAt: at,
    };
    await store.insertRun(run);
    const starting = await store.transition(
      run.id,
      { from: ["QUEUED"] },
      "STARTING",
      { worker: "w1", leaseUntil: new Date(clock + 60_000) },
      at,
    );
    const running = await store.transition(run.id, { from: ["STARTING"], worker: "w1" }, "RUNNING", {}, at);
    await log.start(starting!, running!, [{ type: "StartStructureRunEvent" }]);
    return running!;
  }

  const pending = (): PendingApproval => ({
    step: 1,
    turns: [{ role: "user", content: "Add 20 and 22" }],
    promptStack: [],
    input: { type: "TextArtifact", id: "i", reference: null, meta: {}, name: "i", value: "Add 20 and 22" },
    promptTaskId: "p",
    subtask: {
      id: "s",
      parentTaskId: "p",
      thought: "",
      input: { type: "TextArtifact", id: "t", reference: null, meta: {}, name: "t", value: "" },
      actions: [],
    },
    calls: [
      {
        call: { id: "call_1", name: "Calc_add", input: { a: 20, b: 22 } },
        activity: { toolId: newId(), toolName: "Calc", activity: "add" },
        needsApproval: true,
      },
    ],
    deadline: clock + 3_600_000,
  });

  const pauseDeps = (runLog: RunLog) => ({ store, log: runLog, logger, workerId: "w1", now });
  const decideDeps = (runLog: RunLog, over: Partial<RunsStore> = {}) => ({
    store: { ...store, ...over } as RunsStore,
    log: runLog,
    bus: createMemoryBus(),
    now,
  });
  const approve = [{ callId: "call_1", approved: true }];

  /** The run's SYSTEM events (type and payload), in log order. */
  async function systemEvents(runId: string) {
    const listed = await events.listEvents(
      { runKind: RunKind.ASSISTANT_RUN, runId, offset: 0n, limit: 1000 },
      { headers: headersFor(principal) },
    );
    return listed.events
      .filter((e) => e.origin === "SYSTEM" && e.type.includes("Approval"))
      .map((e) => ({ type: e.type, payload: valueToJson(e.payload) as Record<string, unknown> }));
  }
  const queued = async (runId: string) =>
    (await store.queueCandidates([], [], 1000)).some((entry) => entry.runId === runId);

  it("a pause whose event a crash kept from the log: the sweep writes it, once, after the grace", async () => {
    const run = await runningRun();
    expect(await pauseRun(run, pending(), pauseDeps(crashingLog()))).toBe(true);
    expect(await systemEvents(run.id)).toEqual([]);

    await sweep(); // within the grace: the pauser may still be writing it
    expect(await systemEvents(run.id)).toEqual([]);
    pastGrace();
    await sweep();
    await sweep();
    expect(await systemEvents(run.id)).toEqual([
      {
        type: "AssistantRunAwaitingApproval",
        payload: expect.objectContaining({ calls: [expect.objectContaining({ call_id: "call_1" })] }),
      },
    ]);
    const after = (await store.getRunById(run.id))!;
    expect(after).toMatchObject({ status: "RUNNING", statusDetail: { reason: "AwaitingApproval" } });
    expect(after.pending?.unlogged).toBeUndefined();
    expect(await queued(run.id)).toBe(false); // still awaits its decision
  });

  it("a decision whose event a crash kept from the log: the sweep writes it after the pause's and re-queues the run at once", async () => {
    const run = await runningRun();
    await pauseRun(run, pending(), pauseDeps(log));
    await expect(decideApprovals(decideDeps(crashingLog()), principal, run.id, approve)).rejects.toThrow(
      "the process died here",
    );
    expect((await systemEvents(run.id)).map((e) => e.type)).toEqual(["AssistantRunAwaitingApproval"]);
    expect(await queued(run.id)).toBe(false);

    pastGrace(); // an hour before the deadline
    await sweep();
    await sweep();
    expect(await systemEvents(run.id)).toEqual([
      expect.objectContaining({ type: "AssistantRunAwaitingApproval" }),
      {
        type: "AssistantRunApprovalDecided",
        payload: expect.objectContaining({ call_id: "call_1", approved: true, by: principal.userId }),
      },
    ]);
    expect(await queued(run.id)).toBe(true);
  });

  it("a crash between the last decision's event and the re-queue: the sweep re-queues it at once, the event not written again", async () => {
    const run = await runningRun();
    await pauseRun(run, pending(), pauseDeps(log));
    const dies = {
      requeuePaused: async () => {
        throw new Error("the process died here");
      },
    };
    await expect(decideApprovals(decideDeps(log, dies), principal, run.id, approve)).rejects.toThrow(
      "the process died here",
    );
    expect(await queued(run.id)).toBe(false);

    pastGrace();
    await sweep();
    expect(await queued(run.id)).toBe(true);
    expect((await systemEvents(run.id)).map((e) => e.type)).toEqual([
      "AssistantRunAwaitingApproval",
      "AssistantRunApprovalDecided",
    ]);
  });

  it("a crash after a decision's event but before its mark was cleared: the sweep does not write it twice", async () => {
    const run = await runningRun();
    await pauseRun(run, pending(), pauseDeps(log));
    // The clear (a move that drops the written events from `pending`) is what the dead process never made.
    const dies = {
      transition: (async (id, guard, to, changes, at) => {
        if (guard.pending?.unlogged?.length && changes.pending && !changes.pending.unlogged)
          throw new Error("the process died here");
        return store.transition(id, guard, to, changes, at);
      }) as RunsStore["transition"],
    };
    await expect(decideApprovals(decideDeps(log, dies), principal, run.id, approve)).rejects.toThrow(
      "the process died here",
    );
    expect((await systemEvents(run.id)).map((e) => e.type)).toEqual([
      "AssistantRunAwaitingApproval",
      "AssistantRunApprovalDecided",
    ]);

    pastGrace();
    await sweep();
    await sweep();
    expect((await systemEvents(run.id)).map((e) => e.type)).toEqual([
      "AssistantRunAwaitingApproval",
      "AssistantRunApprovalDecided",
    ]);
    expect((await store.getRunById(run.id))!.pending?.unlogged).toBeUndefined();
    expect(await queued(run.id)).toBe(true);
  });

  it("a decision after a pause whose event was lost writes the pause's first, then its own", async () => {
    const run = await runningRun();
    await pauseRun(run, pending(), pauseDeps(crashingLog()));
    const decided = await decideApprovals(decideDeps(log), principal, run.id, approve);
    expect(decided.pending?.unlogged).toBeUndefined();
    expect((await systemEvents(run.id)).map((e) => e.type)).toEqual([
      "AssistantRunAwaitingApproval",
      "AssistantRunApprovalDecided",
    ]);
    expect(await queued(run.id)).toBe(true);
  });
});
