import { createHash } from "node:crypto";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { invalidArgument } from "@loom/contracts/errors";
import { valueToJson } from "@loom/contracts/json-value";
import { type AssistantRun, RunStatus, type StatusDetail } from "@loom/proto/runs/v1/runs_pb";
import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import { isoTime, pagination } from "../json.ts";
import type { KnownRuns } from "../known-runs.ts";
import { defineOperation } from "../operation.ts";
import { assistantRunListSchema, assistantRunSchema } from "../schemas.ts";
import { idArray, pageQuery, statusQuery, uuid } from "../validation.ts";

/** A family of ids the run uses instead of the assistant's, and one it adds to them. */
const instead = (family: string) =>
  idArray.optional().meta({ description: `The ${family} the run uses instead of the assistant's` });
const added = (family: string) =>
  idArray.optional().meta({
    description: `More ${family} for this run, besides the assistant's (or \`${family.replaceAll(" ", "_")}\` given)`,
  });

const createBody = z.object({
  input: z
    .string()
    .optional()
    .meta({ description: "The user message; absent: the assistant's input template, filled with `args`" }),
  args: z
    .array(z.string())
    .max(100, "must hold at most 100 args")
    .optional()
    .meta({ description: "Arguments for the input template (`{{ args[0] }}`, `{{ args }}`)" }),
  stream: z
    .boolean()
    .optional()
    .meta({ description: "Also write the answer as TextChunkEvents while the model writes it (default false)" }),
  new_thread: z.boolean().optional().meta({ description: "Create a thread for the run, to continue it later" }),
  thread_id: uuid
    .optional()
    .meta({ description: "Continue this thread: its messages are the history (wins over new_thread)" }),
  knowledge_base_ids: instead("knowledge base ids"),
  retriever_ids: instead("retriever ids"),
  ruleset_ids: instead("ruleset ids"),
  structure_ids: instead("structure ids"),
  tool_ids: instead("tool ids"),
  additional_knowledge_base_ids: added("knowledge base ids"),
  additional_retriever_ids: added("retriever ids"),
  additional_ruleset_ids: added("ruleset ids"),
  additional_structure_ids: added("structure ids"),
  additional_tool_ids: added("tool ids"),
});

const idempotencyKey = z.string().min(1).max(255).optional();

/** Same request, same fingerprint: the assistant and the body with keys in a stable order. */
function fingerprint(assistantId: string, body: unknown): string {
  const canonical = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(canonical)
      : value && typeof value === "object"
        ? Object.fromEntries(
            Object.keys(value)
              .sort()
              .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
          )
        : value;
  return createHash("sha256")
    .update(JSON.stringify([assistantId, canonical(body ?? {})]))
    .digest("hex");
}

const list = (values: string[] | undefined) => (values === undefined ? undefined : { values });

export function runJson(run: AssistantRun | undefined) {
  if (!run) throw new Error("the runs service answered without a run");
  return {
    assistant_run_id: run.assistantRunId,
    assistant_id: run.assistantId,
    ...(run.threadId !== undefined ? { thread_id: run.threadId } : {}),
    args: run.args,
    ...(run.input !== undefined ? { input: run.input } : {}),
    ...(run.output !== undefined ? { output: valueToJson(run.output) } : {}),
    status: RunStatus[run.status],
    ...(run.statusDetail
      ? {
          status_detail: {
            reason: run.statusDetail.reason,
            ...(run.statusDetail.message !== undefined ? { message: run.statusDetail.message } : {}),
            ...awaitingJson(run.statusDetail),
          },
        }
      : {}),
    stream: run.stream,
    knowledge_base_ids: run.knowledgeBaseIds,
    retriever_ids: run.retrieverIds,
    ruleset_ids: run.rulesetIds,
    structure_ids: run.structureIds,
    tool_ids: run.toolIds,
    completed_at: run.completedAt ? timestampDate(run.completedAt).toISOString() : null,
    created_at: isoTime(run.createdAt),
    created_by: run.createdBy,
    updated_at: isoTime(run.updatedAt),
  };
}

/** A paused run's calls awaiting approval and its deadline (Loom's, docs/api.md §3); nothing for another run. */
function awaitingJson(detail: StatusDetail) {
  if (!detail.approvalDeadline) return {};
  return {
    calls: detail.awaitingCalls.map((c) => ({
      call_id: c.callId,
      tool_id: c.toolId,
      tool: c.tool,
      activity: c.activity,
      input: c.input ?? {},
      ...(c.decision
        ? {
            decision: {
              approved: c.decision.approved,
              ...(c.decision.reason === undefined ? {} : { reason: c.decision.reason }),
              by: c.decision.by,
              at: isoTime(c.decision.at),
            },
          }
        : {}),
    })),
    deadline: isoTime(detail.approvalDeadline),
  };
}

const decideBody = z.strictObject({
  decisions: z
    .array(
      z.strictObject({
        call_id: z
          .string()
          .min(1)
          .meta({ description: "The call decided on: a `call_id` of the run's `status_detail.calls`" }),
        approved: z
          .boolean()
          .meta({ description: "true: the call goes ahead; false: the model is told it was denied" }),
        reason: z.string().max(2000).optional().meta({ description: "Given to the model with a denial" }),
      }),
    )
    .min(1)
    .meta({ description: "One decision per call, each call at most once" }),
});

export function runOperations({ runs }: ServiceClients, knownRuns: KnownRuns) {
  const runPath = z.object({ assistant_run_id: uuid });
  return [
    defineOperation({
      id: "ListAssistantRuns",
      method: "GET",
      path: "/assistants/{assistant_id}/runs",
      summary: "An assistant's runs, newest first, optionally only those in the given statuses",
      params: z.object({ assistant_id: uuid }),
      query: pageQuery.extend({ status: statusQuery }),
      response: { status: 200, description: "A page of runs", schema: assistantRunListSchema },
      async handle({ params, query, call }) {
        const res = await runs.listAssistantRuns(
          {
            assistantId: params.assistant_id,
            page: { page: query.page, pageSize: query.page_size },
            statuses: query.status.map((s) => RunStatus[s]),
          },
          call,
        );
        return { assistant_runs: res.assistantRuns.map(runJson), pagination: pagination(res.page) };
      },
    }),
    defineOperation({
      id: "CreateAssistantRun",
      method: "POST",
      path: "/assistants/{assistant_id}/runs",
      summary: "Queues a run of the assistant; it executes in the background. Honors an Idempotency-Key header.",
      params: z.object({ assistant_id: uuid }),
      body: { schema: createBody, required: false },
      paid: true,
      response: {
        status: 201,
        description: "The run, QUEUED (or the earlier run of the same Idempotency-Key)",
        schema: assistantRunSchema,
      },
      async handle({ params, body, principal, call, ctx }) {
        const key = idempotencyKey.safeParse(ctx.get("Idempotency-Key") || undefined);
        if (!key.success)
          throw invalidArgument([{ path: "header.Idempotency-Key", message: "must be 1 to 255 characters" }]);
        const b = body ?? {};
        const res = await runs.createAssistantRun(
          {
            assistantId: params.assistant_id,
            input: b.input,
            args: b.args,
            stream: b.stream,
            newThread: b.new_thread,
            threadId: b.thread_id,
            knowledgeBaseIds: list(b.knowledge_base_ids),
            retrieverIds: list(b.retriever_ids),
            rulesetIds: list(b.ruleset_ids),
            structureIds: list(b.structure_ids),
            toolIds: list(b.tool_ids),
            additionalKnowledgeBaseIds: b.additional_knowledge_base_ids,
            additionalRetrieverIds: b.additional_retriever_ids,
            additionalRulesetIds: b.additional_ruleset_ids,
            additionalStructureIds: b.additional_structure_ids,
            additionalToolIds: b.additional_tool_ids,
            idempotencyKey: key.data ?? "",
            requestFingerprint: key.data ? fingerprint(params.assistant_id, body) : "",
          },
          call,
        );
        // Its stream, which clients open next, need not look it up (known-runs.ts).
        if (res.assistantRun) knownRuns.add(principal.organizationId, res.assistantRun.assistantRunId);
        return runJson(res.assistantRun);
      },
    }),
    defineOperation({
      id: "GetAssistantRun",
      method: "GET",
      path: "/assistant-runs/{assistant_run_id}",
      summary: "One run",
      params: runPath,
      response: { status: 200, description: "The run", schema: assistantRunSchema },
      handle: async ({ params, call }) =>
        runJson((await runs.getAssistantRun({ assistantRunId: params.assistant_run_id }, call)).assistantRun),
    }),
    defineOperation({
      id: "CancelAssistantRun",
      method: "POST",
      path: "/assistant-runs/{assistant_run_id}/cancel",
      summary: "Cancels a run; a run that has ended is returned as it is",
      params: runPath,
      response: { status: 200, description: "The run after the cancel", schema: assistantRunSchema },
      handle: async ({ params, call }) =>
        runJson((await runs.cancelAssistantRun({ assistantRunId: params.assistant_run_id }, call)).assistantRun),
    }),
    defineOperation({
      id: "DecideAssistantRunApprovals",
      method: "POST",
      path: "/assistant-runs/{assistant_run_id}/approvals",
      summary:
        "Loom's extension: approves or denies tool calls of a run awaiting approval (status_detail.reason AwaitingApproval); once every call is decided the run resumes",
      params: runPath,
      body: { schema: decideBody, required: true },
      response: { status: 200, description: "The run after the decisions", schema: assistantRunSchema },
      handle: async ({ params, body, call }) =>
        runJson(
          (
            await runs.decideApprovals(
              {
                assistantRunId: params.assistant_run_id,
                decisions: body.decisions.map((d) => ({ callId: d.call_id, approved: d.approved, reason: d.reason })),
              },
              call,
            )
          ).assistantRun,
        ),
    }),
  ];
}
