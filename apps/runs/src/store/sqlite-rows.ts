import type { JsonObject } from "@bufbuild/protobuf";
import type { IdArray } from "@loom/contracts/id-arrays";
import { dateOf, type Row } from "@loom/store/sqlite";
import type { IdempotencyRecord } from "./idempotency.ts";
import type { MessageRecord } from "./messages.ts";
import type { PendingApproval } from "./pending-approval.ts";
import type { QueueEntry } from "./run-queue.ts";
import type { RunChanges, RunRecord, StatusDetail } from "./run-records.ts";
import type { ThreadRecord } from "./threads.ts";

// How the SQLite runs store's rows read as records, and how a transition's changes are written.

/** The IdArray fields and their columns (JSON arrays of ids). */
const idArrayColumns: Record<IdArray, string> = {
  knowledgeBaseIds: "knowledge_base_ids",
  retrieverIds: "retriever_ids",
  rulesetIds: "ruleset_ids",
  structureIds: "structure_ids",
  toolIds: "tool_ids",
};
export const idArrays = Object.entries(idArrayColumns) as [IdArray, string][];

/**
 * What a transition may change on the run row, how each is stored, and how it
 * reads back (the lease has its own table; a run's thread message is written
 * with the move, to its thread).
 */
export const changeColumns: Record<
  Exclude<keyof RunChanges, "leaseUntil" | "threadMessage">,
  [column: string, store: (value: never) => string | number, load: (stored: never) => unknown]
> = {
  statusDetail: ["status_detail", (v: StatusDetail) => JSON.stringify(v), (stored: string) => JSON.parse(stored)],
  output: ["output", (v: unknown) => JSON.stringify(v), (stored: string) => JSON.parse(stored)],
  completedAt: ["completed_at", (v: Date) => v.getTime(), (stored: number) => dateOf(stored)],
  worker: ["worker", (v: string) => v, (stored: string) => stored],
  pending: ["pending", (v: PendingApproval) => JSON.stringify(v), (stored: string) => JSON.parse(stored)],
};

/** A run row (with its lease's `until`, joined) as a record: NULL columns become absent fields. */
export function runOf(row: Row | undefined): RunRecord | undefined {
  if (!row) return undefined;
  // Built field by field (not spread): the worker and every poll read runs, and this is their cost.
  const run = {
    id: row.id as string,
    organizationId: row.organization_id as string,
    assistantId: row.assistant_id as string,
    args: JSON.parse(row.args as string) as string[],
    message: row.message as string,
    stream: row.stream === 1,
    status: row.status as RunRecord["status"],
    createdBy: row.created_by as string,
    createdAt: dateOf(row.created_at)!,
    updatedAt: dateOf(row.updated_at)!,
  } as RunRecord;
  for (const [field, column] of idArrays) run[field] = JSON.parse(row[column] as string) as string[];
  if (row.thread_id !== null) run.threadId = row.thread_id as string;
  if (row.input !== null) run.input = row.input as string;
  if (row.instructions !== null) run.instructions = row.instructions as string;
  if (row.output_schema !== null) run.outputSchema = JSON.parse(row.output_schema as string) as JsonObject;
  if (row.status_detail !== null) run.statusDetail = JSON.parse(row.status_detail as string) as StatusDetail;
  if (row.output !== null) run.output = JSON.parse(row.output as string);
  if (row.completed_at !== null) run.completedAt = dateOf(row.completed_at)!;
  if (row.worker !== null) run.worker = row.worker as string;
  if (row.traceparent !== null && row.traceparent !== undefined) run.traceparent = row.traceparent as string;
  if (row.pending !== null && row.pending !== undefined)
    run.pending = JSON.parse(row.pending as string) as PendingApproval;
  if (row.lease_until !== null && row.lease_until !== undefined) run.leaseUntil = dateOf(row.lease_until)!;
  return run;
}

export const threadOf = (row: Row | undefined): ThreadRecord | undefined =>
  row && {
    id: row.id as string,
    organizationId: row.organization_id as string,
    name: row.name as string,
    ...(row.alias === null ? {} : { alias: row.alias as string }),
    metadata: JSON.parse(row.metadata as string),
    messageCount: Number(row.message_count),
    messagesLength: Number(row.messages_length),
    createdBy: row.created_by as string,
    createdAt: dateOf(row.created_at)!,
    updatedAt: dateOf(row.updated_at)!,
    ...(row.active_run_id === null ? {} : { activeRunId: row.active_run_id as string }),
  };

export const messageOf = (row: Row | undefined): MessageRecord | undefined =>
  row && {
    id: row.id as string,
    organizationId: row.organization_id as string,
    threadId: row.thread_id as string,
    index: Number(row.idx),
    input: row.input as string,
    output: row.output as string,
    metadata: JSON.parse(row.metadata as string),
    createdBy: row.created_by as string,
    createdAt: dateOf(row.created_at)!,
    updatedAt: dateOf(row.updated_at)!,
  };

export const idempotencyOf = (row: Row | undefined): IdempotencyRecord | undefined =>
  row && {
    organizationId: row.organization_id as string,
    key: row.key as string,
    fingerprint: row.fingerprint as string,
    runId: row.run_id as string,
    createdAt: dateOf(row.created_at)!,
    attempt: Number(row.attempt),
    attemptAt: dateOf(row.attempt_at)!,
  };

export const queueEntryOf = (row: Row): QueueEntry => ({
  runId: row.run_id as string,
  organizationId: row.organization_id as string,
  ...(row.thread_id === null ? {} : { threadId: row.thread_id as string }),
  createdAt: dateOf(row.created_at)!,
});
