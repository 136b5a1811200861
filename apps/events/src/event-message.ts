import { create } from "@bufbuild/protobuf";
import { timestampFromDate, type Value } from "@bufbuild/protobuf/wkt";
import { jsonToValue } from "@loom/contracts/json-value";
import { type Event, EventSchema, RunKind } from "@loom/proto/events/v1/events_pb";
import type { AppendedEvent, EventRecord, LogKind } from "./store/port.ts";

export const kindEnums: Record<LogKind, RunKind> = {
  "assistant-run": RunKind.ASSISTANT_RUN,
  "structure-run": RunKind.STRUCTURE_RUN,
};

/** A stored event as reads and follows answer it: the payload a Value. */
export function eventMessage(e: EventRecord): Event {
  return appendedEventMessage(e, jsonToValue(e.payload));
}

/**
 * An appended event as AppendEvents answers it, with the payload its writer
 * sent: a Value, or JSON text (answered as `payload_json`, unconverted).
 */
export function appendedEventMessage(e: AppendedEvent, payload: Value | string): Event {
  return create(EventSchema, {
    eventId: e.id,
    runKind: kindEnums[e.runKind],
    runId: e.runId,
    offset: BigInt(e.offset),
    type: e.type,
    origin: e.origin,
    ...(typeof payload === "string" ? { payloadJson: payload } : { payload }),
    timestamp: e.timestamp,
    createdAt: timestampFromDate(e.createdAt),
    organizationId: e.organizationId,
  });
}

/**
 * An event as the bus carries it: the payload always a Value, so that a
 * follower of any version reads it (`payload_json` is an append's answer
 * only). Converted when a message is made, which the in-process bus does only
 * for a subscriber.
 */
export function busEvent(event: Event): Event {
  if (!event.payloadJson) return event;
  return { ...event, payload: jsonToValue(JSON.parse(event.payloadJson)), payloadJson: "" };
}
