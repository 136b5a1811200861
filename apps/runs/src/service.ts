import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type Client, type ServiceImpl } from "@connectrpc/connect";
import type { Bus } from "@loom/bus/bus";
import type { Logger } from "@loom/telemetry/logger";
import { invalidArgument, notFound } from "@loom/contracts/errors";
import { rateLimitRefusals } from "@loom/telemetry/metrics";
import { isUuid, newId } from "@loom/contracts/ids";
import { jsonToValue } from "@loom/contracts/json-value";
import { pageInfo, pageWindow } from "@loom/contracts/paging";
import { headersFor, requirePrincipal, type Principal } from "@loom/server/principal";
import { storeBackedService, type RpcService } from "@loom/server/rpc-service";
import { nameProblem } from "@loom/contracts/text";
import { callTraceparent } from "@loom/telemetry/tracing";
import { AssistantsService } from "@loom/proto/assistants/v1/assistants_pb";
import type { StringList } from "@loom/proto/common/v1/common_pb";
import { RunsService, RunStatus as RunStatusEnum, type CreateAssistantRunRequest } from "@loom/proto/runs/v1/runs_pb";
import { effectiveIds, renderInput } from "./input.ts";
import type { RunLog } from "./run-log.ts";
import { logEnd } from "./run-end.ts";
import {
  activeStatuses,
  idempotencyWindowMs,
  isTerminal,
  QueueFull,
  runStatuses,
  type IdempotencyRecord,
  type RunRecord,
  type RunsStore,
  type RunStatus,
  type ThreadRecord,
} from "./store/port.ts";
import { countTransition } from "./metrics.ts";
import { runSubjects } from "./subjects.ts";

export interface RunsDeps {
  store: RunsStore;
  assistants: Client<typeof AssistantsService>;
  log: RunLog;
  bus: Bus;
  logger: Logger;
  /** Queued runs one organization may have; a create past it is RESOURCE_EXHAUSTED. */
  maxQueuedPerOrganization: number;
  /** How long a keyed create may go without storing its run before a retry takes the key over. */
  idempotencyStallMs?: number;
  now?: () => Date;
}

/** A create that may still store its run; a retry waits for it this long before taking over. */
const defaultIdempotencyStallMs = 10_000;

const queueFullRefusals = rateLimitRefusals.labels("queued_runs");

const toEnum = (status: RunStatus) => RunStatusEnum[status];
const fromEnum = (status: RunStatusEnum): RunStatus | undefined => runStatuses.find((s) => RunStatusEnum[s] === status);
const present = (list: StringList | undefined) => list?.values;

export function createRunsService(deps: RunsDeps): RpcService {
  const { store, log, bus } = deps;
  const now = deps.now ?? (() => new Date());

  async function assistantOf(principal: Principal, assistantId: string) {
    const { assistant } = await deps.assistants.getAssistant({ assistantId }, { headers: headersFor(principal) });
    if (!assistant) throw notFound("assistant");
    return assistant;
  }

  /** The thread the run joins, and the new thread to store with it (stored only once the run's first event is). */
  async function threadFor(principal: Principal, req: CreateAssistantRunRequest, at: Date): Promise<{ threadId?: string; create?: ThreadRecord }> {
    if (req.threadId !== undefined) {
      if (!isUuid(req.threadId) || !(await store.getThread(principal.organizationId, req.threadId.toLowerCase()))) throw notFound("thread");
      return { threadId: req.threadId.toLowerCase() };
    }
    if (!req.newThread) return {};
    const thread: ThreadRecord = { id: newId(), organizationId: principal.organizationId, name: "New thread", createdBy: principal.userId, createdAt: at, updatedAt: at };
    return { threadId: thread.id, create: thread };
  }

  /** Everything a create checks and reads, before it writes anything: a refused create writes nothing. */
  /** The answer to a create past the queued cap. */
  function queueFull(): ConnectError {
    queueFullRefusals.inc();
    return new ConnectError(`the organization has ${deps.maxQueuedPerOrganization} runs queued; try again once some have started`, Code.ResourceExhausted);
  }

  async function prepare(principal: Principal, req: CreateAssistantRunRequest, id: string, at: Date, traceparent: string | undefined) {
    const assistant = await assistantOf(principal, req.assistantId);
    // Early, so a create plainly past the cap writes nothing; the store checks again with the write (`insertRun`).
    if ((await store.countQueued(principal.organizationId)) >= deps.maxQueuedPerOrganization) throw queueFull();
    const thread = await threadFor(principal, req, at);
    const run: RunRecord = {
      id,
      organizationId: principal.organizationId,
      assistantId: assistant.assistantId,
      threadId: thread.threadId,
      args: req.args,
      input: req.input,
      message: renderInput(req.input, assistant.input, req.args),
      stream: req.stream,
      status: "QUEUED",
      ...effectiveIds(
        assistant,
        {
          knowledgeBaseIds: present(req.knowledgeBaseIds),
          retrieverIds: present(req.retrieverIds),
          rulesetIds: present(req.rulesetIds),
          structureIds: present(req.structureIds),
          toolIds: present(req.toolIds),
        },
        {
          knowledgeBaseIds: req.additionalKnowledgeBaseIds,
          retrieverIds: req.additionalRetrieverIds,
          rulesetIds: req.additionalRulesetIds,
          structureIds: req.additionalStructureIds,
          toolIds: req.additionalToolIds,
        },
      ),
      createdBy: principal.userId,
      createdAt: at,
      updatedAt: at,
      ...(traceparent ? { traceparent } : {}),
    };
    return { run, newThread: thread.create };
  }

  /**
   * The run's first event, then the run: with the events service down the
   * create fails and no run exists. A run stored by another attempt with the
   * same id (a keyed create taken over) wins; `takeover` skips the event if
   * the stalled attempt already wrote it.
   */
  async function enqueue({ run, newThread }: Awaited<ReturnType<typeof prepare>>, takeover: boolean): Promise<RunRecord> {
    try {
      if (!takeover || !(await log.started(run))) await log.lifecycle(run);
    } catch (error) {
      throw new ConnectError("the run could not be queued: its event log is unavailable", Code.Unavailable, undefined, undefined, error);
    }
    if (newThread) await store.insertThread(newThread);
    let inserted: boolean;
    try {
      inserted = await store.insertRun(run, deps.maxQueuedPerOrganization);
    } catch (error) {
      if (!(error instanceof QueueFull)) throw error;
      // Filled by creates at the same time: refused, and the thread made for it goes (its log keeps one event, as a create that died).
      if (newThread) await store.deleteThread(newThread.organizationId, newThread.id);
      throw queueFull();
    }
    if (!inserted) return (await store.getRunById(run.id))!;
    countTransition("NONE", "QUEUED");
    await bus.publish(runSubjects.queued, new Uint8Array());
    return run;
  }

  /**
   * A create with an Idempotency-Key. The record names its run's id before
   * the run is stored, so every request with the key answers that one run:
   * a request that finds the record waits for its run to appear; if it does
   * not within `idempotencyStallMs` (the first request died), one waiter takes
   * the key over (a unique insert per attempt) and stores the run under the
   * recorded id, whose unique _id refuses a second run should the first
   * request wake up.
   */
  async function keyedCreate(principal: Principal, req: CreateAssistantRunRequest, traceparent: string | undefined): Promise<RunRecord> {
    const { organizationId } = principal;
    const key = req.idempotencyKey;
    const stallMs = deps.idempotencyStallMs ?? defaultIdempotencyStallMs;
    // Only a safety net: a waiter takes the key over once the attempt has stalled.
    const giveUp = now().getTime() + 2 * stallMs + 10_000;
    let waits = 0;
    for (;;) {
      const at = now();
      const record = await store.getIdempotency(organizationId, key, new Date(at.getTime() - idempotencyWindowMs));
      if (!record) {
        const prepared = await prepare(principal, req, newId(), at, traceparent);
        const fresh: IdempotencyRecord = { organizationId, key, fingerprint: req.requestFingerprint, runId: prepared.run.id, createdAt: at, attempt: 0, attemptAt: at };
        if (!(await store.putIdempotency(fresh))) {
          // Taken meanwhile, or an expired record not pruned yet: drop the latter and look again.
          const stored = await store.getIdempotency(organizationId, key, new Date(0));
          if (stored && at.getTime() - stored.createdAt.getTime() > idempotencyWindowMs) await store.deleteIdempotency(organizationId, key, stored.runId);
          continue;
        }
        try {
          return await enqueue(prepared, false);
        } catch (error) {
          await store.deleteIdempotency(organizationId, key, fresh.runId).catch(() => {}); // the key is free for a retry
          throw error;
        }
      }
      if (record.fingerprint !== req.requestFingerprint) {
        throw new ConnectError("this Idempotency-Key was used with a different request", Code.AlreadyExists);
      }
      const run = await store.getRun(organizationId, record.runId);
      if (run) return run;
      const attempt = record.attempt + 1;
      if (at.getTime() - record.attemptAt.getTime() > stallMs && (await store.takeOverIdempotency(organizationId, key, attempt, at))) {
        return enqueue(await prepare(principal, req, record.runId, at, traceparent), true);
      }
      if (at.getTime() > giveUp) throw new ConnectError("a request with this Idempotency-Key is still in progress", Code.Unavailable);
      // Backing off: many waiters polling at once would slow the very store the first request is writing to.
      await new Promise((resolve) => setTimeout(resolve, Math.min(250, 20 * 2 ** waits++)));
    }
  }

  /** Keyed creates in progress on this replica: a concurrent one with the same key and body waits for it instead of polling. */
  const keyedInProgress = new Map<string, { fingerprint: string; done: Promise<RunRecord> }>();

  async function coalesced(principal: Principal, req: CreateAssistantRunRequest, traceparent: string | undefined): Promise<RunRecord> {
    const id = `${principal.organizationId}:${req.idempotencyKey}`;
    const earlier = keyedInProgress.get(id);
    if (earlier?.fingerprint === req.requestFingerprint) {
      const run = await earlier.done.catch(() => undefined);
      if (run) return run;
    }
    if (earlier) return keyedCreate(principal, req, traceparent); // another body, or the first failed: decide on the record
    const done = keyedCreate(principal, req, traceparent);
    keyedInProgress.set(id, { fingerprint: req.requestFingerprint, done });
    try {
      return await done;
    } finally {
      keyedInProgress.delete(id);
    }
  }

  function checkCreate(req: CreateAssistantRunRequest): void {
    if (req.idempotencyKey !== "" && (req.idempotencyKey.length > 255 || req.requestFingerprint === "")) {
      throw invalidArgument([{ path: "header.Idempotency-Key", message: "must be 1 to 255 characters, with a request fingerprint" }]);
    }
  }

  /**
   * After a cancel: the replica whose worker holds the run is told to abort
   * its model call (a lost message is made up for by its lease renewal, which
   * finds the run no longer its own), then the terminal event is written.
   */
  async function ended(cancelled: RunRecord): Promise<void> {
    await bus.publish(runSubjects.control(cancelled.id), new TextEncoder().encode("cancel")).catch((error: unknown) => {
      deps.logger.warn({ err: error, run_id: cancelled.id }, "could not tell the run's worker of its cancel; its lease renewal will");
    });
    await logEnd(cancelled, { store, log, logger: deps.logger });
  }

  const impl: ServiceImpl<typeof RunsService> = {
    async createAssistantRun(req, ctx) {
      const principal = requirePrincipal(ctx);
      checkCreate(req);
      // The create request's trace, for the worker to continue (tracing off: none).
      const traceparent = callTraceparent(ctx.requestHeader);
      if (req.idempotencyKey) {
        return { assistantRun: runMessage(await coalesced(principal, req, traceparent)) };
      }
      const run = await enqueue(await prepare(principal, req, newId(), now(), traceparent), false);
      return { assistantRun: runMessage(run) };
    },

    async getAssistantRun(req, ctx) {
      const run = await store.getRun(requirePrincipal(ctx).organizationId, req.assistantRunId);
      if (!run) throw notFound("assistant run");
      return { assistantRun: runMessage(run) };
    },

    async cancelAssistantRun(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      const run = await store.getRun(organizationId, req.assistantRunId);
      if (!run) throw notFound("assistant run");
      if (run.status === "CANCELLED") {
        // A cancel retried after one whose terminal event or message did not get through: both again.
        await ended(run);
        return { assistantRun: runMessage(run) };
      }
      if (isTerminal(run.status)) return { assistantRun: runMessage(run) };
      const at = now();
      const cancelled = await store.transition(
        run.id,
        { from: activeStatuses },
        "CANCELLED",
        { statusDetail: { reason: "Cancelled", message: "cancelled by request" }, completedAt: at, leaseUntil: undefined },
        at,
      );
      if (!cancelled) return { assistantRun: runMessage((await store.getRun(organizationId, run.id))!) }; // ended meanwhile
      countTransition(run.status, "CANCELLED"); // as read just before: a run that moved on in between counts from its earlier status
      await ended(cancelled);
      // CANCELLED is written, so the answer says so: an event that could not be written yet is the sweep's to write.
      return { assistantRun: runMessage(cancelled) };
    },

    async listAssistantRuns(req, ctx) {
      const principal = requirePrincipal(ctx);
      const window = pageWindow(req.page);
      const statuses = req.statuses.map((s) => fromEnum(s) ?? invalidStatus());
      // The list lives under the assistant: an unknown or deleted assistant is 404 (its runs stay readable by id).
      const [page] = await Promise.all([
        store.listRuns(principal.organizationId, req.assistantId, statuses, window.skip, window.pageSize),
        assistantOf(principal, req.assistantId),
      ]);
      return { assistantRuns: page.items.map(runMessage), page: pageInfo(window, page.totalCount) };
    },

    async createThread(req, ctx) {
      const principal = requirePrincipal(ctx);
      const problem = nameProblem(req.name, 1, 256);
      if (problem) throw invalidArgument([{ path: "body.name", message: problem }]);
      const at = now();
      const thread: ThreadRecord = { id: newId(), organizationId: principal.organizationId, name: req.name, alias: req.alias, createdBy: principal.userId, createdAt: at, updatedAt: at };
      await store.insertThread(thread);
      return { thread: threadMessage(thread) };
    },

    async getThread(req, ctx) {
      const thread = await store.getThread(requirePrincipal(ctx).organizationId, req.threadId);
      if (!thread) throw notFound("thread");
      return { thread: threadMessage(thread) };
    },

    async listThreads(req, ctx) {
      const window = pageWindow(req.page);
      const page = await store.listThreads(requirePrincipal(ctx).organizationId, req.alias, window.skip, window.pageSize);
      return { threads: page.items.map(threadMessage), page: pageInfo(window, page.totalCount) };
    },

    async deleteThread(req, ctx) {
      if (!(await store.deleteThread(requirePrincipal(ctx).organizationId, req.threadId))) throw notFound("thread");
      return {};
    },
  };

  return storeBackedService("runs", (router) => router.service(RunsService, answeredDurably(impl, store)), store);
}

/**
 * Every answer waits until the store's writes so far are on disk
 * (`RunsStore.durable`), failures too: a caller is told nothing a crash
 * could take back, while the worker's own steps never wait for the disk.
 */
function answeredDurably(impl: ServiceImpl<typeof RunsService>, store: RunsStore): ServiceImpl<typeof RunsService> {
  const wrapped: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(impl) as Array<[string, (req: unknown, ctx: unknown) => Promise<unknown>]>) {
    wrapped[name] = async (req: unknown, ctx: unknown) => {
      let answer: unknown;
      try {
        answer = await method(req, ctx);
      } catch (error) {
        await store.durable().catch(() => {});
        throw error;
      }
      await store.durable();
      return answer;
    };
  }
  return wrapped as ServiceImpl<typeof RunsService>;
}

function invalidStatus(): never {
  throw invalidArgument([{ path: "query.status", message: `must be one of ${runStatuses.join(", ")}` }]);
}

function runMessage(run: RunRecord) {
  return {
    assistantRunId: run.id,
    assistantId: run.assistantId,
    threadId: run.threadId,
    args: run.args,
    input: run.input,
    output: run.output === undefined ? undefined : jsonToValue(run.output),
    status: toEnum(run.status),
    statusDetail: run.statusDetail,
    stream: run.stream,
    knowledgeBaseIds: run.knowledgeBaseIds,
    retrieverIds: run.retrieverIds,
    rulesetIds: run.rulesetIds,
    structureIds: run.structureIds,
    toolIds: run.toolIds,
    completedAt: run.completedAt ? timestampFromDate(run.completedAt) : undefined,
    createdAt: timestampFromDate(run.createdAt),
    createdBy: run.createdBy,
    updatedAt: timestampFromDate(run.updatedAt),
  };
}

function threadMessage(t: ThreadRecord) {
  return {
    threadId: t.id,
    organizationId: t.organizationId,
    name: t.name,
    alias: t.alias,
    createdAt: timestampFromDate(t.createdAt),
    createdBy: t.createdBy,
    updatedAt: timestampFromDate(t.updatedAt),
  };
}
