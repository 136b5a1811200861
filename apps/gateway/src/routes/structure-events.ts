import { RunKind } from "@loom/proto/events/v1/events_pb";
import { z } from "zod";
import { bodyLimits } from "../body.ts";
import type { ServiceClients } from "../clients.ts";
import { defineOperation } from "../operation.ts";
import { structureEventListSchema, structureEventSchema } from "../schemas.ts";
import { boundedName, jsonValue, parseInput, uuid } from "../validation.ts";
import { eventJson, eventList, eventPageQuery } from "./events.ts";

export const maxEventsPerRequest = 1000;

const newEvent = z.object({
  type: boundedName(200).meta({ description: "What happened, e.g. griptape's StartTaskEvent" }),
  timestamp: z.number().meta({ description: "When it happened: seconds since the Unix epoch, with a fraction" }),
  payload: jsonValue.optional().meta({ description: "The event itself: any JSON value (null when absent)" }),
});
const eventArray = z
  .array(newEvent)
  .min(1, "must hold at least one event")
  .max(maxEventsPerRequest, `must hold at most ${maxEventsPerRequest} events`);

/**
 * CreateEvents takes `{"events": [...]}`, a bare array, or one bare event
 * (docs/behaviour.md §6, compat). Each form is validated whole, with paths as
 * sent (`body.events[3].type`, `body[3].type`, `body.type`).
 */
function eventsOf(body: unknown) {
  if (Array.isArray(body)) return parseInput("body", eventArray, body);
  if (body && typeof body === "object" && "events" in body)
    return parseInput("body", z.object({ events: eventArray }), body).events;
  return [parseInput("body", newEvent, body)];
}

export function structureEventOperations({ events }: ServiceClients) {
  const runPath = z.object({ structure_run_id: uuid });
  return [
    defineOperation({
      id: "CreateEvents",
      method: "POST",
      path: "/structure-runs/{structure_run_id}/events",
      summary: "Appends events to a structure run's log: {events: [...]}, a bare array, or one event; all or nothing",
      params: runPath,
      body: {
        schema: z.unknown(),
        required: true,
        limit: bodyLimits.events,
        documented: z.union([
          z.object({ events: eventArray.meta({ description: "The events, in the order to append them" }) }),
          eventArray,
          newEvent,
        ]),
      },
      response: { status: 202, description: "Stored" },
      async handle({ params, body, call }) {
        const batch = eventsOf(body);
        await events.appendEvents(
          {
            runKind: RunKind.STRUCTURE_RUN,
            runId: params.structure_run_id,
            events: batch.map((e) => ({
              type: e.type,
              origin: "USER",
              timestamp: e.timestamp,
              // As text: the events service stores it as given, with no Value built and taken apart again.
              payloadJson: JSON.stringify(e.payload ?? null),
            })),
          },
          call,
        );
      },
    }),
    defineOperation({
      id: "ListEvents",
      method: "GET",
      path: "/structure-runs/{structure_run_id}/events",
      summary: "A structure run's events in the order they were appended, by offset",
      params: runPath,
      query: eventPageQuery,
      response: { status: 200, description: "A page of the run's event log", schema: structureEventListSchema },
      async handle({ params, query, call }) {
        const res = await events.listEvents(
          {
            runKind: RunKind.STRUCTURE_RUN,
            runId: params.structure_run_id,
            offset: BigInt(query.offset),
            limit: query.limit,
          },
          call,
        );
        return eventList(res.events, res.totalCount, query.offset, query.limit, "structure_run_id");
      },
    }),
    defineOperation({
      id: "GetEvent",
      method: "GET",
      path: "/events/{event_id}",
      summary: "One structure-run event",
      params: z.object({ event_id: uuid }),
      response: { status: 200, description: "The event", schema: structureEventSchema },
      async handle({ params, call }) {
        const { event } = await events.getEvent({ eventId: params.event_id }, call);
        if (!event) throw new Error("the events service answered without an event");
        return eventJson(event, "structure_run_id");
      },
    }),
  ];
}
