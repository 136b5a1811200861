import { type Client, Code, ConnectError } from "@connectrpc/connect";
import { notFound } from "@loom/contracts/errors";
import { isUuid, newId } from "@loom/contracts/ids";
import type { AssistantsService } from "@loom/proto/assistants/v1/assistants_pb";
import type { StringList } from "@loom/proto/common/v1/common_pb";
import type { CreateAssistantRunRequest } from "@loom/proto/runs/v1/runs_pb";
import type { Principal } from "@loom/server/principal";
import { rateLimitRefusals } from "@loom/telemetry/metrics";
import { effectiveIds, renderInput } from "../input.ts";
import type { RunQueue } from "../store/run-queue.ts";
import type { RunRecord } from "../store/run-records.ts";
import type { NewThread, ThreadStore } from "../store/threads.ts";
import { assistantOf } from "./assistant.ts";

/** A run ready to be stored, and the new thread to store with it (stored only once the run's first event is). */
export interface NewRun {
  run: RunRecord;
  newThread?: NewThread;
}

export interface NewRunDeps {
  assistants: Client<typeof AssistantsService>;
  store: RunQueue & ThreadStore;
  /** Queued runs one organization may have; a create past it is RESOURCE_EXHAUSTED. */
  maxQueuedPerOrganization: number;
}

const queueFullRefusals = rateLimitRefusals.labels("queued_runs");

/** The answer to a create past the queued cap (counted as a refusal). */
export function queueFull(maxQueued: number): ConnectError {
  queueFullRefusals.inc();
  return new ConnectError(
    `the organization has ${maxQueued} runs queued; try again once some have started`,
    Code.ResourceExhausted,
  );
}

const present = (list: StringList | undefined) => list?.values;

/**
 * Everything a create checks and reads, before it writes anything (a refused
 * create writes nothing): the assistant, the queued cap, the thread; then the
 * QUEUED run, with id `id`, as the request and its assistant make it.
 */
export async function newRun(
  deps: NewRunDeps,
  principal: Principal,
  req: CreateAssistantRunRequest,
  id: string,
  at: Date,
  traceparent: string | undefined,
): Promise<NewRun> {
  const assistant = await assistantOf(deps.assistants, principal, req.assistantId);
  // Early, so a create plainly past the cap writes nothing; the store checks again with the write (`insertRun`).
  if ((await deps.store.countQueued(principal.organizationId)) >= deps.maxQueuedPerOrganization)
    throw queueFull(deps.maxQueuedPerOrganization);
  const thread = await threadFor(deps.store, principal, req, at);
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

/** The thread the run joins (NOT_FOUND when the request names one that is not there), and the new thread to store with it. */
async function threadFor(
  threads: ThreadStore,
  principal: Principal,
  req: CreateAssistantRunRequest,
  at: Date,
): Promise<{ threadId?: string; create?: NewThread }> {
  if (req.threadId !== undefined) {
    if (!isUuid(req.threadId) || !(await threads.getThread(principal.organizationId, req.threadId.toLowerCase())))
      throw notFound("thread");
    return { threadId: req.threadId.toLowerCase() };
  }
  if (!req.newThread) return {};
  const thread: NewThread = {
    id: newId(),
    organizationId: principal.organizationId,
    name: "New thread",
    metadata: {},
    createdBy: principal.userId,
    createdAt: at,
    updatedAt: at,
  };
  return { threadId: thread.id, create: thread };
}
