import { create, fromJson, type JsonValue as ProtoJson } from "@bufbuild/protobuf";
import { timestampFromDate, type Value, ValueSchema } from "@bufbuild/protobuf/wkt";
import { type Event, EventSchema, RunKind } from "@loom/proto/events/v1/events_pb";
import type { EventRecord, LogKind } from "./store/port.ts";

export const kindEnums: Record<LogKind, RunKind> = {
  "assistant-run": RunKind.ASSISTANT_RUN,
  "structure-run": RunKind.STRUCTURE_RUN,
};

/**
 * A stored event as every RPC answers it (lists, gets, follows) and as the bus
 * carries it. `payload`: the record's payload as a Value already (an append
 * has the writer's), so a large one is not converted back from JSON.
 */
export function eventMessage(e: EventRecord, payload?: Value): Event {
  return create(EventSchema, {
    eventId: e.id,
    runKind: kindEnums[e.runKind],
    runId: e.runId,
    offset: BigInt(e.offset),
    type: e.type,
    origin: e.origin,
    payload: payload ?? fromJson(ValueSchema, e.payload as ProtoJson),
    timestamp: e.timestamp,
    createdAt: timestampFromDate(e.createdAt),
    organizationId: e.organizationId,
  });
}
