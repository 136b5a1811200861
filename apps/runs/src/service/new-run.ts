import { type Client, Code, ConnectError } from "@connectrpc/connect";
import { notFound } from "@loom/contracts/errors";
import { isUuid, newId } from "@loom/contracts/ids";
import type { AssistantsService } from "@loom/proto/assistants/v1/assistants_pb";
import type { RulesetsService } from "@loom/proto/assistants/v1/rulesets_pb";
import type { StringList } from "@loom/proto/common/v1/common_pb";
import type { KnowledgeBasesService } from "@loom/proto/knowledge/v1/knowledge_bases_pb";
import type { CreateAssistantRunRequest } from "@loom/proto/runs/v1/runs_pb";
import type { ToolsService } from "@loom/proto/tools/v1/tools_pb";
import type { Principal } from "@loom/server/principal";
import { rateLimitRefusals } from "@loom/telemetry/metrics";
import { effectiveIds, renderInput } from "../input.ts";
import type { RunQueue } from "../store/run-queue.ts";
import type { RunRecord } from "../store/run-records.ts";
import type { NewThread, ThreadStore } from "../store/threads.ts";
import { assistantOf } from "./assistant.ts";
import { checkRunKnowledgeBases } from "./run-knowledge-bases.ts";
import { readRunRules } from "./run-rules.ts";
import { checkRunToolIds } from "./run-tool-ids.ts";

/** A run ready to be stored, and the new thread to store with it (stored only once the run's first event is). */
export interface NewRun {
  run: RunRecord;
  newThread?: NewThread;
}

export interface NewRunDeps {
  assistants: Client<typeof AssistantsService>;
  /** The assistants service's rulesets, read for the run's rules. */
  rulesets: Client<typeof RulesetsService>;
  /** The knowledge service, asked whether the run's knowledge bases exist. */
  knowledgeBases: Client<typeof KnowledgeBasesService>;
  /** The tools service, asked whether the tool ids a run gives exist. */
  tools: Client<typeof ToolsService>;
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

/** A read's value, or its error thrown. */
function readValue<T>(read: PromiseSettledResult<T>): T {
  if (read.status === "rejected") throw read.reason;
  return read.value;
}

/**
 * Everything a create checks and reads, before it writes anything (a refused
 * create writes nothing): the assistant, its rulesets and knowledge bases, the tools it names, the queued cap, the
 * thread; then the
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
  const given = {
    knowledgeBaseIds: present(req.knowledgeBaseIds),
    retrieverIds: present(req.retrieverIds),
    rulesetIds: present(req.rulesetIds),
    structureIds: present(req.structureIds),
    toolIds: present(req.toolIds),
  };
  const ids = effectiveIds(assistant, given, {
    knowledgeBaseIds: req.additionalKnowledgeBaseIds,
    retrieverIds: req.additionalRetrieverIds,
    rulesetIds: req.additionalRulesetIds,
    structureIds: req.additionalStructureIds,
    toolIds: req.additionalToolIds,
  });
  // Read at once, so rulesets, knowledge bases and tools cost a run no extra round trip; refused in this order all the same.
  const [rulesRead, knowledgeRead, toolsRead, queuedRead, threadRead] = await Promise.allSettled([
    // The rules as they are now: the run keeps them (docs/behaviour.md §5); an unknown ruleset is 400.
    readRunRules(deps.rulesets, principal, ids.rulesetIds, [
      given.rulesetIds
        ? { field: "body.ruleset_ids", ids: given.rulesetIds }
        : { field: "assistant.ruleset_ids", ids: assistant.rulesetIds },
      { field: "body.additional_ruleset_ids", ids: req.additionalRulesetIds },
    ]),
    // An unknown knowledge base is 400, as an unknown ruleset is.
    checkRunKnowledgeBases(deps.knowledgeBases, principal, ids.knowledgeBaseIds, [
      given.knowledgeBaseIds
        ? { field: "body.knowledge_base_ids", ids: given.knowledgeBaseIds }
        : { field: "assistant.knowledge_base_ids", ids: assistant.knowledgeBaseIds },
      { field: "body.additional_knowledge_base_ids", ids: req.additionalKnowledgeBaseIds },
    ]),
    // The tools the request names exist (docs/behaviour.md §5); an unknown one is 400.
    checkRunToolIds(deps.tools, principal, [
      { field: "body.tool_ids", ids: given.toolIds ?? [] },
      { field: "body.additional_tool_ids", ids: req.additionalToolIds },
    ]),
    deps.store.countQueued(principal.organizationId),
    threadFor(deps.store, principal, req, at),
  ]);
  const rules = readValue(rulesRead);
  readValue(knowledgeRead);
  readValue(toolsRead);
  // Early, so a create plainly past the cap writes nothing; the store checks again with the write (`insertRun`).
  if (readValue(queuedRead) >= deps.maxQueuedPerOrganization) throw queueFull(deps.maxQueuedPerOrganization);
  const thread = readValue(threadRead);
  const run: RunRecord = {
    id,
    organizationId: principal.organizationId,
    assistantId: assistant.assistantId,
    threadId: thread.threadId,
    args: req.args,
    input: req.input,
    message: renderInput(req.input, assistant.input, req.args),
    ...rules,
    stream: req.stream,
    status: "QUEUED",
    ...ids,
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
    if (!isUuid(req.threadId) || !(await threads.hasThread(principal.organizationId, req.threadId.toLowerCase())))
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
