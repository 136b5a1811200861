import { z } from "zod";
import { invalidArgument } from "@loom/kit/errors";
import { RunKind } from "@loom/proto/events/v1/events_pb";
import type { ServiceClients } from "../clients.ts";
import { defineOperation } from "../operation.ts";
import { sseStream } from "../sse.ts";
import { integerParam, uuid } from "../validation.ts";
import { eventJson } from "./events.ts";

/** Keep-alive comments after this much silence (semantics.md §6). */
export const keepAliveSeconds = 15;

const resumeQuery = z.object({ offset: integerParam(0, Number.MAX_SAFE_INTEGER, 0).optional() });

/**
 * Where a stream starts: just after `Last-Event-ID` (the offset of the last
 * event the client has), else at the `offset` query (the first offset to
 * send, as in lists), else at the start of the log.
 */
function startOffset(lastEventId: string, queryOffset: number | undefined): bigint {
  if (lastEventId !== "") {
    if (!/^\d+$/.test(lastEventId)) throw invalidArgument([{ path: "header.Last-Event-ID", message: "must be an event offset" }]);
    return BigInt(lastEventId) + 1n;
  }
  return BigInt(queryOffset ?? 0);
}

export function streamOperations({ runs, events }: ServiceClients) {
  const follow = (runKind: RunKind, runId: string, from: bigint, call: { headers: Record<string, string>; signal: AbortSignal }) =>
    events.followEvents({ runKind, runId, fromOffset: from, keepAliveInterval: { seconds: BigInt(keepAliveSeconds) } }, call);
  return [
    defineOperation({
      id: "GetAssistantRunEventsSSE",
      method: "GET",
      path: "/assistant-runs/{assistant_run_id}/events/stream",
      summary: "The run's events as server-sent events: the log so far, then live, ending after the terminal event",
      params: z.object({ assistant_run_id: uuid }),
      query: resumeQuery,
      response: { status: 200, description: "text/event-stream; `id:` is the event's offset", stream: true },
      async handle({ params, query, call, ctx }) {
        const from = startOffset(ctx.get("Last-Event-ID"), query.offset);
        await runs.getAssistantRun({ assistantRunId: params.assistant_run_id }, call); // 404 before streaming
        return sseStream(follow(RunKind.ASSISTANT_RUN, params.assistant_run_id, from, call), (e) => eventJson(e, "assistant_run_id"));
      },
    }),
    defineOperation({
      id: "GetStructureRunEventsSSE",
      method: "GET",
      path: "/structure-runs/{structure_run_id}/events/stream",
      summary: "The structure run's events as server-sent events, ending after StructureRunCompleted or StructureRunError",
      params: z.object({ structure_run_id: uuid }),
      query: resumeQuery,
      response: { status: 200, description: "text/event-stream; `id:` is the event's offset", stream: true },
      async handle({ params, query, call, ctx }) {
        const from = startOffset(ctx.get("Last-Event-ID"), query.offset);
        return sseStream(follow(RunKind.STRUCTURE_RUN, params.structure_run_id, from, call), (e) => eventJson(e, "structure_run_id"));
      },
    }),
  ];
}
