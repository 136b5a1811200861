import { valueToJson } from "@loom/contracts/json-value";
import { type Event, RunKind } from "@loom/proto/events/v1/events_pb";
import { z } from "zod";
import type { ServiceClients } from "../clients.ts";
import { isoTime } from "../json.ts";
import { defineOperation } from "../operation.ts";
import { assistantEventListSchema } from "../schemas.ts";
import { integerParam, uuid } from "../validation.ts";

/** `offset` ≥ 0 (default 0) and `limit` 1..1000 (default 100), sent as strings (docs/behaviour.md §4). */
export const eventPageQuery = z.object({
  offset: integerParam(0, Number.MAX_SAFE_INTEGER, 0, "The offset of the first event to answer: 0 is the run's first"),
  limit: integerParam(1, 1000, 100, "How many events to answer at most"),
});

export function eventJson(event: Event, runField: "assistant_run_id" | "structure_run_id") {
  return {
    event_id: event.eventId,
    [runField]: event.runId,
    type: event.type,
    origin: event.origin,
    payload: event.payloadJson ? JSON.parse(event.payloadJson) : valueToJson(event.payload),
    timestamp: event.timestamp,
    created_at: isoTime(event.createdAt),
  };
}

/**
 * An event's public JSON as one line of text. A payload that came as JSON
 * text (`payload_json`, as its writer stored it) is spliced in as it is:
 * Loom's writers send `JSON.stringify` output, so the line is the one
 * `JSON.stringify` of eventJson would give, without parsing the payload and
 * writing it again. Text with a line break (not Loom's) is written anew: an
 * SSE `data:` line cannot hold one.
 */
export function eventJsonText(event: Event, runField: "assistant_run_id" | "structure_run_id"): string {
  const payload = event.payloadJson;
  if (!payload || /[\r\n]/.test(payload)) return JSON.stringify(eventJson(event, runField));
  const head = JSON.stringify({
    event_id: event.eventId,
    [runField]: event.runId,
    type: event.type,
    origin: event.origin,
  });
  const tail = JSON.stringify({ timestamp: event.timestamp, created_at: isoTime(event.createdAt) });
  return `${head.slice(0, -1)},"payload":${payload},${tail.slice(1)}`;
}

/** The EventList shape of docs/api.md §4, from one page of a log. */
export function eventList(
  events: Event[],
  totalCount: bigint,
  offset: number,
  limit: number,
  runField: "assistant_run_id" | "structure_run_id",
) {
  return {
    events: events.map((e) => eventJson(e, runField)),
    count: events.length,
    limit,
    offset,
    next_offset: offset + events.length,
    total_count: Number(totalCount),
  };
}

export function assistantEventOperations({ runs, events }: ServiceClients) {
  return [
    defineOperation({
      id: "ListAssistantEvents",
      method: "GET",
      path: "/assistant-runs/{assistant_run_id}/events",
      summary: "A run's events in the order they happened, by offset",
      params: z.object({ assistant_run_id: uuid }),
      query: eventPageQuery,
      response: { status: 200, description: "A page of the run's event log", schema: assistantEventListSchema },
      async handle({ params, query, call }) {
        // The run decides existence and organization; its log may still be empty.
        await runs.getAssistantRun({ assistantRunId: params.assistant_run_id }, call);
        const res = await events.listEvents(
          {
            runKind: RunKind.ASSISTANT_RUN,
            runId: params.assistant_run_id,
            offset: BigInt(query.offset),
            limit: query.limit,
          },
          call,
        );
        return eventList(res.events, res.totalCount, query.offset, query.limit, "assistant_run_id");
      },
    }),
  ];
}
