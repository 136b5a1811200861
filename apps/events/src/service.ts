import { create, fromJson, toBinary, toJson, type JsonValue as ProtoJson } from "@bufbuild/protobuf";
import { terminalAssistantRunEvents } from "./log-closed.ts";
import { timestampFromDate, ValueSchema, type Value } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import { EventSchema, EventsService, RunKind, type Event, type NewEvent } from "@loom/proto/events/v1/events_pb";
import type { Bus } from "@loom/kit/bus";
import { invalidArgument, notFound } from "@loom/kit/errors";
import { isUuid, newId } from "@loom/kit/ids";
import type { Logger } from "@loom/kit/logger";
import { requirePrincipal } from "@loom/kit/principal";
import type { RpcService } from "@loom/kit/rpc-service";
import { subjects } from "@loom/kit/subjects";
import { lengthProblem } from "@loom/kit/text";
import type { EventRecord, EventsStore, JsonValue, LogKind, LogRef, NewEventRecord } from "./store/port.ts";

/** Bounds of semantics.md §4 and §6. */
export const eventBounds = { maxBatch: 1000, maxTypeLength: 200, defaultLimit: 100, maxLimit: 1000 } as const;

export const origins = ["SYSTEM", "ASSISTANT", "USER"] as const;

export interface EventsDeps {
  store: EventsStore;
  /** Where stored events are published for followers (subjects.events). */
  bus?: Bus;
  /** Where a failed publish is reported; the append itself has succeeded by then. */
  logger?: Logger;
  now?: () => Date;
}

type Violation = { path: string; message: string };

const kinds: Partial<Record<RunKind, LogKind>> = {
  [RunKind.ASSISTANT_RUN]: "assistant-run",
  [RunKind.STRUCTURE_RUN]: "structure-run",
};
const kindEnums: Record<LogKind, RunKind> = { "assistant-run": RunKind.ASSISTANT_RUN, "structure-run": RunKind.STRUCTURE_RUN };
const runNames: Record<LogKind, string> = { "assistant-run": "assistant run", "structure-run": "structure run" };

/**
 * The log a request names, or violations. Paths are those of the public
 * routes: the run id is the `{assistant_run_id}` / `{structure_run_id}` path
 * parameter.
 */
function checkLog(violations: Violation[], req: { runKind: RunKind; runId: string }): LogRef | undefined {
  const runKind = kinds[req.runKind];
  if (!runKind) {
    violations.push({ path: "run_kind", message: "must be ASSISTANT_RUN or STRUCTURE_RUN" });
    if (!isUuid(req.runId)) violations.push({ path: "run_id", message: "must be a uuid" });
    return undefined;
  }
  if (!isUuid(req.runId)) {
    violations.push({ path: `path.${runKind.replace("-", "_")}_id`, message: "must be a uuid" });
    return undefined;
  }
  return { runKind, runId: req.runId.toLowerCase() };
}

/** One NewEvent checked; its record when it passes. */
function checkEvent(violations: Violation[], path: string, e: NewEvent, at: Date): NewEventRecord | undefined {
  const before = violations.length;
  const typeProblem = lengthProblem(e.type, 1, eventBounds.maxTypeLength);
  if (typeProblem) violations.push({ path: `${path}.type`, message: typeProblem });
  if (!(origins as readonly string[]).includes(e.origin)) violations.push({ path: `${path}.origin`, message: `must be one of ${origins.join(", ")}` });
  if (!Number.isFinite(e.timestamp)) violations.push({ path: `${path}.timestamp`, message: "must be a finite number" });
  const payload = payloadJson(e.payload);
  if (payload === invalid) violations.push({ path: `${path}.payload`, message: "must be a JSON value" });
  if (violations.length > before || payload === invalid) return undefined;
  return { id: newId(), type: e.type, origin: e.origin, payload, timestamp: e.timestamp, createdAt: at };
}

const invalid = Symbol("invalid");

/** A Value as plain JSON; absent is JSON null. A Value that no JSON can express (no kind, NaN) is invalid. */
function payloadJson(value: Value | undefined): JsonValue | typeof invalid {
  if (!value) return null;
  try {
    return toJson(ValueSchema, value) as JsonValue;
  } catch {
    return invalid;
  }
}

export function createEventsService(deps: EventsDeps): RpcService {
  const { store, bus, logger } = deps;
  const now = deps.now ?? (() => new Date());

  /** Publishes stored events in offset order. The record is already written: a lost message is the bus's at-most-once, not a failed append. */
  async function publish(log: LogRef, stored: Event[]): Promise<void> {
    if (!bus) return;
    const subject = subjects.events(log.runKind, log.runId);
    for (const event of stored) {
      try {
        await bus.publish(subject, toBinary(EventSchema, event));
      } catch (error) {
        logger?.warn({ err: error, subject, offset: Number(event.offset) }, "could not publish a stored event");
      }
    }
  }

  const impl: ServiceImpl<typeof EventsService> = {
    async appendEvents(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      const violations: Violation[] = [];
      const log = checkLog(violations, req);
      const at = now();
      const batch: NewEventRecord[] = [];
      if (req.events.length < 1 || req.events.length > eventBounds.maxBatch) {
        violations.push({ path: "body.events", message: `must hold 1 to ${eventBounds.maxBatch} events` });
      } else {
        req.events.forEach((e, i) => {
          const record = checkEvent(violations, `body.events[${i}]`, e, at);
          if (record) batch.push(record);
        });
      }
      if (violations.length > 0 || !log) throw invalidArgument(violations);
      const closes = log.runKind === "assistant-run" && batch.some((e) => e.origin === "SYSTEM" && terminalAssistantRunEvents.has(e.type));
      const stored = await store.append(log, organizationId, batch, closes);
      if (!stored) throw notFound(runNames[log.runKind]);
      const events = stored.map(eventMessage);
      await publish(log, events);
      return { events };
    },

    async listEvents(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      const violations: Violation[] = [];
      const log = checkLog(violations, req);
      const { offset } = req;
      const limit = req.limit === 0 ? eventBounds.defaultLimit : req.limit;
      if (offset < 0n) violations.push({ path: "query.offset", message: "must be at least 0" });
      if (limit < 1 || limit > eventBounds.maxLimit) violations.push({ path: "query.limit", message: `must be between 1 and ${eventBounds.maxLimit}` });
      if (violations.length > 0 || !log) throw invalidArgument(violations);
      // Anything past Number.MAX_SAFE_INTEGER is past the end of every log.
      const start = offset > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(offset);
      const window = await store.list(log, organizationId, start, limit);
      // A structure run exists once written to; an assistant run is known by
      // the runs service, and one without events reads as an empty log.
      if (!window || (log.runKind === "structure-run" && window.totalCount === 0)) throw notFound(runNames[log.runKind]);
      return { events: window.items.map(eventMessage), totalCount: BigInt(window.totalCount) };
    },

    async getEvent(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      const found = isUuid(req.eventId) ? await store.get(organizationId, req.eventId.toLowerCase()) : undefined;
      if (!found) throw notFound("event");
      return { event: eventMessage(found) };
    },

    // Replay and live follow come with the SSE streams (a later change).
    async *followEvents() {
      throw new ConnectError("not implemented yet", Code.Unimplemented);
    },
  };

  return {
    name: "events",
    routes: (router) => router.service(EventsService, impl),
    ready: () => store.ready(),
    close: () => store.close(),
  };
}

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
