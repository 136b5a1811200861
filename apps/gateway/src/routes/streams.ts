import { invalidArgument } from "@loom/contracts/errors";
import { RunKind } from "@loom/proto/events/v1/events_pb";
import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import type { EventFeeds } from "../event-feeds.ts";
import type { KnownRuns } from "../known-runs.ts";
import { defineOperation } from "../operation.ts";
import { assistantEventSchema, structureEventSchema } from "../schemas.ts";
import { integerParam, uuid } from "../validation.ts";
import { eventJsonText } from "./events.ts";

const maxOffset = Number.MAX_SAFE_INTEGER;
const resumeQuery = z.object({
  offset: integerParam(
    0,
    maxOffset,
    0,
    "The offset of the first event to send; a Last-Event-ID header wins over it",
  ).optional(),
});

/**
 * Where a stream starts: just after `Last-Event-ID` (the offset of the last
 * event the client has), else at the `offset` query (the first offset to
 * send, as in lists), else at the start of the log. Both name a start in
 * 0..2^53-1: the header one less, as it names the event before it.
 */
function startOffset(lastEventId: string, queryOffset: number | undefined): bigint {
  if (lastEventId !== "") {
    if (!/^\d{1,16}$/.test(lastEventId) || Number(lastEventId) > maxOffset - 1) {
      throw invalidArgument([
        { path: "header.Last-Event-ID", message: `must be an event offset, 0 to ${maxOffset - 1}` },
      ]);
    }
    return BigInt(lastEventId) + 1n;
  }
  return BigInt(queryOffset ?? 0);
}

export function streamOperations({ runs }: ServiceClients, feeds: EventFeeds, knownRuns: KnownRuns) {
  return [
    defineOperation({
      id: "GetAssistantRunEventsSSE",
      method: "GET",
      path: "/assistant-runs/{assistant_run_id}/events/stream",
      summary: "The run's events as server-sent events: the log so far, then live, ending after the terminal event",
      params: z.object({ assistant_run_id: uuid }),
      query: resumeQuery,
      response: {
        status: 200,
        description: "text/event-stream; `id:` is the event's offset",
        stream: true,
        eventIds: true,
        schema: assistantEventSchema,
      },
      async handle({ params, query, principal, call, ctx }) {
        const from = startOffset(ctx.get("Last-Event-ID"), query.offset);
        const runId = params.assistant_run_id;
        // 404 before streaming: a run this gateway has not seen yet is looked up first.
        if (!knownRuns.has(principal.organizationId, runId)) {
          await runs.getAssistantRun({ assistantRunId: runId }, call);
          knownRuns.add(principal.organizationId, runId);
        }
        return feeds.open({
          runKind: RunKind.ASSISTANT_RUN,
          runId,
          organizationId: principal.organizationId,
          from,
          call,
          toJson: (e) => eventJsonText(e, "assistant_run_id"),
        });
      },
    }),
    defineOperation({
      id: "GetStructureRunEventsSSE",
      method: "GET",
      path: "/structure-runs/{structure_run_id}/events/stream",
      summary:
        "The structure run's events as server-sent events, ending after StructureRunCompleted or StructureRunError",
      params: z.object({ structure_run_id: uuid }),
      query: resumeQuery,
      response: {
        status: 200,
        description: "text/event-stream; `id:` is the event's offset",
        stream: true,
        eventIds: true,
        schema: structureEventSchema,
      },
      async handle({ params, query, principal, call, ctx }) {
        const from = startOffset(ctx.get("Last-Event-ID"), query.offset);
        const runId = params.structure_run_id;
        return feeds.open({
          runKind: RunKind.STRUCTURE_RUN,
          runId,
          organizationId: principal.organizationId,
          from,
          call,
          toJson: (e) => eventJsonText(e, "structure_run_id"),
        });
      },
    }),
  ];
}
