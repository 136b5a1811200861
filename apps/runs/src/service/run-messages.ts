import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { invalidArgument } from "@loom/contracts/errors";
import { jsonToValue } from "@loom/contracts/json-value";
import { RunStatus as RunStatusEnum } from "@loom/proto/runs/v1/runs_pb";
import type { MessageRecord } from "../store/messages.ts";
import type { PendingApproval } from "../store/pending-approval.ts";
import { type RunRecord, type RunStatus, runStatuses } from "../store/run-records.ts";
import type { ThreadRecord } from "../store/threads.ts";

// Records as the RunsService's messages, and its status filter as statuses.

/** A listed status as the store names it; an unknown one is INVALID_ARGUMENT. */
export function statusOf(status: RunStatusEnum): RunStatus {
  const found = runStatuses.find((s) => RunStatusEnum[s] === status);
  if (found === undefined)
    throw invalidArgument([{ path: "query.status", message: `must be one of ${runStatuses.join(", ")}` }]);
  return found;
}

export function runMessage(run: RunRecord) {
  return {
    assistantRunId: run.id,
    assistantId: run.assistantId,
    threadId: run.threadId,
    args: run.args,
    input: run.input,
    output: run.output === undefined ? undefined : jsonToValue(run.output),
    status: RunStatusEnum[run.status],
    statusDetail: run.statusDetail && {
      ...run.statusDetail,
      // A paused run says which calls await approval (decided ones with the decision), and until when.
      ...(run.pending && !run.worker && run.status === "RUNNING" ? awaitingCalls(run.pending) : {}),
    },
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

export function threadMessage(t: ThreadRecord) {
  return {
    threadId: t.id,
    organizationId: t.organizationId,
    name: t.name,
    alias: t.alias,
    metadata: t.metadata,
    messageCount: BigInt(t.messageCount),
    messagesLength: BigInt(t.messagesLength),
    createdAt: timestampFromDate(t.createdAt),
    createdBy: t.createdBy,
    updatedAt: timestampFromDate(t.updatedAt),
  };
}

/** A thread's message as the RunsService's ThreadMessage. */
export function messageMessage(m: MessageRecord) {
  return {
    messageId: m.id,
    threadId: m.threadId,
    index: BigInt(m.index),
    input: m.input,
    output: m.output,
    metadata: m.metadata,
    createdAt: timestampFromDate(m.createdAt),
    createdBy: m.createdBy,
    updatedAt: timestampFromDate(m.updatedAt),
  };
}

/** A paused run's calls needing approval and its deadline, as StatusDetail's `awaiting_calls` and `approval_deadline`. */
function awaitingCalls(pending: PendingApproval) {
  return {
    awaitingCalls: pending.calls
      .filter((c) => c.needsApproval)
      .map(({ call, activity, decision }) => ({
        callId: call.id,
        toolId: activity?.toolId ?? "",
        tool: activity?.toolName ?? call.name,
        activity: activity?.activity ?? "",
        input: call.input,
        ...(decision
          ? {
              decision: {
                approved: decision.approved,
                ...(decision.reason === undefined ? {} : { reason: decision.reason }),
                by: decision.by,
                at: timestampFromDate(new Date(decision.at)),
              },
            }
          : {}),
      })),
    approvalDeadline: timestampFromDate(new Date(pending.deadline)),
  };
}
