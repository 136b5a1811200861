import type { Client, ServiceImpl } from "@connectrpc/connect";
import type { Bus } from "@loom/bus/bus";
import { notFound } from "@loom/contracts/errors";
import { newId } from "@loom/contracts/ids";
import { pageInfo, pageWindow } from "@loom/contracts/paging";
import type { AssistantsService } from "@loom/proto/assistants/v1/assistants_pb";
import type { RulesetsService } from "@loom/proto/assistants/v1/rulesets_pb";
import type { KnowledgeBasesService } from "@loom/proto/knowledge/v1/knowledge_bases_pb";
import { RunsService } from "@loom/proto/runs/v1/runs_pb";
import type { ToolsService } from "@loom/proto/tools/v1/tools_pb";
import { requirePrincipal } from "@loom/server/principal";
import { type RpcService, storeBackedService } from "@loom/server/rpc-service";
import type { Logger } from "@loom/telemetry/logger";
import { callTraceparent } from "@loom/telemetry/tracing";
import { decideApprovals } from "./approvals/decide.ts";
import type { RunLog } from "./run-log.ts";
import { answeredDurably } from "./service/answered-durably.ts";
import { assistantOf } from "./service/assistant.ts";
import { cancelRun } from "./service/cancel.ts";
import { enqueue } from "./service/enqueue.ts";
import { checkIdempotencyKey, createKeyedCreates, type KeyedCreateDeps } from "./service/keyed-create.ts";
import { messageHandlers } from "./service/message-handlers.ts";
import { newRun } from "./service/new-run.ts";
import { runMessage, statusOf } from "./service/run-messages.ts";
import { threadHandlers } from "./service/thread-handlers.ts";
import type { RunsStore } from "./store/port.ts";

export interface RunsDeps {
  store: RunsStore;
  assistants: Client<typeof AssistantsService>;
  /** The assistants service's rulesets (same service, same URL): a run's rules are read at its creation. */
  rulesets: Client<typeof RulesetsService>;
  /** The knowledge service: a run's knowledge bases must exist at its creation. */
  knowledgeBases: Client<typeof KnowledgeBasesService>;
  /** The tools service: the tool ids a run gives must name tools of its organization. */
  tools: Client<typeof ToolsService>;
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

/**
 * The RunsService: runs are created here (checked, their first event
 * written, stored, the workers told) and read, listed and cancelled; the
 * worker (`createRunWorker`) executes them. Threads and their messages are its records.
 */
export function createRunsService(deps: RunsDeps): RpcService {
  const { store, maxQueuedPerOrganization } = deps;
  const now = deps.now ?? (() => new Date());
  // A create's two steps: its checks and its run, then storing the run.
  const prepareRun: KeyedCreateDeps["newRun"] = (...args) =>
    newRun(
      {
        assistants: deps.assistants,
        rulesets: deps.rulesets,
        knowledgeBases: deps.knowledgeBases,
        tools: deps.tools,
        store,
        maxQueuedPerOrganization,
      },
      ...args,
    );
  const storeRun: KeyedCreateDeps["enqueue"] = (run, takeover) =>
    enqueue({ store, log: deps.log, bus: deps.bus, maxQueuedPerOrganization }, run, takeover);
  const createKeyed = createKeyedCreates({
    store,
    newRun: prepareRun,
    enqueue: storeRun,
    stallMs: deps.idempotencyStallMs ?? defaultIdempotencyStallMs,
    now,
  });

  const impl: ServiceImpl<typeof RunsService> = {
    async createAssistantRun(req, ctx) {
      const principal = requirePrincipal(ctx);
      checkIdempotencyKey(req);
      // The create request's trace, for the worker to continue (tracing off: none).
      const traceparent = callTraceparent(ctx.requestHeader);
      const run = req.idempotencyKey
        ? await createKeyed(principal, req, traceparent)
        : await storeRun(await prepareRun(principal, req, newId(), now(), traceparent), false);
      return { assistantRun: runMessage(run) };
    },

    async getAssistantRun(req, ctx) {
      const run = await store.getRun(requirePrincipal(ctx).organizationId, req.assistantRunId);
      if (!run) throw notFound("assistant run");
      return { assistantRun: runMessage(run) };
    },

    async cancelAssistantRun(req, ctx) {
      const run = await cancelRun(
        { store, log: deps.log, bus: deps.bus, logger: deps.logger, now },
        requirePrincipal(ctx).organizationId,
        req.assistantRunId,
      );
      return { assistantRun: runMessage(run) };
    },

    async decideApprovals(req, ctx) {
      const run = await decideApprovals(
        { store, log: deps.log, bus: deps.bus, now },
        requirePrincipal(ctx),
        req.assistantRunId,
        req.decisions.map((d) => ({
          callId: d.callId,
          approved: d.approved,
          ...(d.reason === undefined ? {} : { reason: d.reason }),
        })),
      );
      return { assistantRun: runMessage(run) };
    },

    async listAssistantRuns(req, ctx) {
      const principal = requirePrincipal(ctx);
      const window = pageWindow(req.page);
      const statuses = req.statuses.map(statusOf);
      // The list lives under the assistant: an unknown or deleted assistant is 404 (its runs stay readable by id).
      const [page] = await Promise.all([
        store.listRuns(principal.organizationId, req.assistantId, statuses, window.skip, window.pageSize),
        assistantOf(deps.assistants, principal, req.assistantId),
      ]);
      return { assistantRuns: page.items.map(runMessage), page: pageInfo(window, page.totalCount) };
    },

    ...threadHandlers(store, now),
    ...messageHandlers(store, now),
  };

  return storeBackedService("runs", (router) => router.service(RunsService, answeredDurably(impl, store)), store);
}
