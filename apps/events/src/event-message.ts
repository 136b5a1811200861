import { create, fromJson, type JsonValue as ProtoJson } from "@bufbuild/protobuf";
import { timestampFromDate, ValueSchema } from "@bufbuild/protobuf/wkt";
import { type Event, EventSchema, RunKind } from "@loom/proto/events/v1/events_pb";
import type { EventRecord, LogKind } from "./store/port.ts";

export const kindEnums: Record<LogKind, RunKind> = {
  "assistant-run": RunKind.ASSISTANT_RUN,
  "structure-run": RunKind.STRUCTURE_RUN,
};

/** A stored event as every RPC answers it (lists, gets, follows) and as the bus carries it. */
export function eventMessage(e: EventRecord): Event {
  return create(EventSchema, {
    eventId: e.id,
    runKind: kindEnums[e.runKind],
    runId: e.runId,
    offset: BigInt(e.offset),
    type: e.type,
    origin: e.origin,
    payload: fromJson(ValueSchema, e.payload as ProtoJson),
    timestamp: e.timestamp,
    createdAt: timestampFromDate(e.createdAt),
    organizationId: e.organizationId,
  });
}
