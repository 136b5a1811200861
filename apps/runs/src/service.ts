import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type Client, type ServiceImpl } from "@connectrpc/connect";
import type { Bus } from "@loom/kit/bus";
import { invalidArgument, notFound } from "@loom/kit/errors";
import { isUuid, newId } from "@loom/kit/ids";
import { jsonToValue } from "@loom/kit/json-value";
import { pageInfo, pageWindow } from "@loom/kit/paging";
import { headersFor, requirePrincipal, type Principal } from "@loom/kit/principal";
import type { RpcService } from "@loom/kit/rpc-service";
import { nameProblem } from "@loom/kit/text";
import { AssistantsService } from "@loom/proto/assistants/v1/assistants_pb";
import type { StringList } from "@loom/proto/common/v1/common_pb";
import { RunsService, RunStatus as RunStatusEnum, type CreateAssistantRunRequest } from "@loom/proto/runs/v1/runs_pb";
import { effectiveIds, renderInput } from "./input.ts";
import type { RunLog } from "./run-log.ts";
import { activeStatuses, isTerminal, runStatuses, type RunRecord, type RunsStore, type RunStatus, type ThreadRecord } from "./store/port.ts";
import { runSubjects } from "./subjects.ts";

/** How long an Idempotency-Key keeps answering with its run (semantics.md §5). */
export const idempotencyWindowMs = 24 * 60 * 60 * 1000;

export interface RunsDeps {
  store: RunsStore;
  assistants: Client<typeof AssistantsService>;
  log: RunLog;
  bus: Bus;
  now?: () => Date;
}

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

  /** The run an Idempotency-Key already names, if it still does; 409 if the body differs. */
  async function replay(principal: Principal, req: CreateAssistantRunRequest): Promise<RunRecord | undefined> {
    const record = await store.getIdempotency(principal.organizationId, req.idempotencyKey);
    if (!record) return undefined;
    const run = await store.getRun(principal.organizationId, record.runId);
    if (!run || now().getTime() - record.createdAt.getTime() > idempotencyWindowMs) {
      await store.deleteIdempotency(principal.organizationId, req.idempotencyKey); // expired, or its run never got stored
      return undefined;
    }
    if (record.fingerprint !== req.requestFingerprint) {
      throw new ConnectError("this Idempotency-Key was used with a different request", Code.AlreadyExists);
    }
    return run;
  }

  async function threadFor(principal: Principal, req: CreateAssistantRunRequest, at: Date): Promise<string | undefined> {
    if (req.threadId !== undefined) {
      if (!isUuid(req.threadId) || !(await store.getThread(principal.organizationId, req.threadId.toLowerCase()))) throw notFound("thread");
      return req.threadId.toLowerCase();
    }
    if (!req.newThread) return undefined;
    const thread: ThreadRecord = { id: newId(), organizationId: principal.organizationId, name: "New thread", createdBy: principal.userId, createdAt: at, updatedAt: at };
    await store.insertThread(thread);
    return thread.id;
  }

  function checkCreate(req: CreateAssistantRunRequest): void {
    if (req.idempotencyKey !== "" && (req.idempotencyKey.length > 255 || req.requestFingerprint === "")) {
      throw invalidArgument([{ path: "header.Idempotency-Key", message: "must be 1 to 255 characters, with a request fingerprint" }]);
    }
  }

  const impl: ServiceImpl<typeof RunsService> = {
    async createAssistantRun(req, ctx) {
      const principal = requirePrincipal(ctx);
      checkCreate(req);
      if (req.idempotencyKey) {
        const earlier = await replay(principal, req);
        if (earlier) return { assistantRun: runMessage(earlier), idempotentReplay: true };
      }
      const assistant = await assistantOf(principal, req.assistantId);
      const at = now();
      const run: RunRecord = {
        id: newId(),
        organizationId: principal.organizationId,
        assistantId: assistant.assistantId,
        threadId: await threadFor(principal, req, at),
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
      };
      if (req.idempotencyKey) {
        const record = { organizationId: principal.organizationId, key: req.idempotencyKey, fingerprint: req.requestFingerprint, runId: run.id, createdAt: at };
        if (!(await store.putIdempotency(record))) {
          // A concurrent request with the same key got there first: answer with its run.
          const earlier = await replay(principal, req);
          if (earlier) return { assistantRun: runMessage(earlier), idempotentReplay: true };
          throw new ConnectError("a request with this Idempotency-Key is in progress", Code.Aborted);
        }
      }
      await store.insertRun(run);
      await log.lifecycle(run);
      await bus.publish(runSubjects.queued, new Uint8Array());
      return { assistantRun: runMessage(run), idempotentReplay: false };
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
      await log.lifecycle(cancelled);
      // The replica whose worker holds the run aborts its model call.
      await bus.publish(runSubjects.control(run.id), new TextEncoder().encode("cancel"));
      return { assistantRun: runMessage(cancelled) };
    },

    async listAssistantRuns(req, ctx) {
      const principal = requirePrincipal(ctx);
      const window = pageWindow(req.page);
      const statuses = req.statuses.map((s) => fromEnum(s) ?? invalidStatus());
      const page = await store.listRuns(principal.organizationId, req.assistantId, statuses, window.skip, window.pageSize);
      // An unknown assistant is 404; a deleted one's runs stay listable.
      if (page.totalCount === 0 && (await store.listRuns(principal.organizationId, req.assistantId, [], 0, 1)).totalCount === 0) {
        await assistantOf(principal, req.assistantId);
      }
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

  return {
    name: "runs",
    routes: (router) => router.service(RunsService, impl),
    ready: () => store.ready(),
    close: () => store.close(),
  };
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
