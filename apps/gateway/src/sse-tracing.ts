import type { Event } from "@loom/proto/events/v1/events_pb";
import { contextOf, inSpanSync, SpanKind } from "@loom/telemetry/tracing";

/**
 * Hands a live event to a feed's SSE subscribers inside a span of the
 * append's trace (the event's traceparent, set by the events service's bus
 * delivery): a trace shows when each event reached the streams. Events read
 * from the store (a replay) carry none and are handed over as they are.
 */
export function deliverEvent(event: Event, deliver: () => void, subscribers: number): void {
  if (!event.traceparent) return deliver();
  const attributes = {
    "loom.event.offset": Number(event.offset),
    "loom.event.type": event.type,
    "loom.sse.subscribers": subscribers,
  };
  inSpanSync("SSE deliver", { kind: SpanKind.PRODUCER, attributes }, contextOf(event.traceparent), deliver);
}
