import { toBinary } from "@bufbuild/protobuf";
import { durationMs, type Value } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import type { Bus } from "@loom/bus/bus";
import { createMemoryBus } from "@loom/bus/memory";
import { invalidArgument, notFound, type Violation } from "@loom/contracts/errors";
import { isUuid, newId } from "@loom/contracts/ids";
import { jsonToValue, valueToJson } from "@loom/contracts/json-value";
import { terminalLifecycleEvents } from "@loom/contracts/run-lifecycle";
import { subjects } from "@loom/contracts/subjects";
import { nameProblem } from "@loom/contracts/text";
import {
  type Event,
  EventSchema,
  EventsService,
  type FollowEventsRequest,
  type NewEvent,
  RunKind,
} from "@loom/proto/events/v1/events_pb";
import { isDependencyDown } from "@loom/runtime/dependency-down";
import { requirePrincipal } from "@loom/server/principal";
import type { RpcService } from "@loom/server/rpc-service";
import type { Logger } from "@loom/telemetry/logger";
import { appendedEventMessage, busEvent, eventMessage } from "./event-message.ts";
import { defaultFollowTiming, type FollowTiming, follow } from "./follow.ts";
import { eventsAppended } from "./metrics.ts";
import { createRecentLogs } from "./recent-logs.ts";
import { spanHandlers } from "./spans.ts";
import {
  type AppendedEvent,
  type EventsStore,
  InvalidPayloadJson,
  type LogKind,
  type LogRef,
  type NewEventRecord,
} from "./store/port.ts";

export { eventMessage };

/** Bounds of docs/behaviour.md §4 and §6. */
export const eventBounds = { maxBatch: 1000, maxTypeLength: 200, defaultLimit: 100, maxLimit: 1000 } as const;

/** FollowEvents keep-alive interval: the default (docs/behaviour.md §6) and the accepted range. */
export const keepAliveBounds = { defaultMs: 15_000, minMs: 10, maxMs: 3_600_000 } as const;

export const origins = ["SYSTEM", "ASSISTANT", "USER"] as const;

export interface EventsDeps {
  store: EventsStore;
  /**
   * Where stored events are published for followers (subjects.events), and
   * where follows listen. Without one, an in-process bus: followers of this
   * process only.
   */
  bus?: Bus | undefined;
  /** Where a failed publish is reported; the append itself has succeeded by then. */
  logger?: Logger;
  now?: () => Date;
  /** FollowEvents knobs (tests shorten the hole grace). */
  follow?: Partial<FollowTiming>;
  /**
   * Assistant-run logs are written by the runs service alone (docs/behaviour.md
   * §6). When its answers wait for the durability of this same database (the
   * all-in-one: one SQLite file, one WAL, written in order), an append to
   * one is answered once written, and its events are published once on
   * disk: whatever the runs service then tells anyone waits for its own
   * `durable()`, which covers the append. Every other answer waits here.
   */
  runLogsCoveredByRuns?: boolean;
  /** Bytes of lately stored events kept to answer follows of logs closed here (recent-logs.ts); 16 MiB unless given. */
  recentLogBytes?: number;
}

const kinds: Partial<Record<RunKind, LogKind>> = {
  [RunKind.ASSISTANT_RUN]: "assistant-run",
  [RunKind.STRUCTURE_RUN]: "structure-run",
};
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
  const typeProblem = nameProblem(e.type, 1, eventBounds.maxTypeLength);
  if (typeProblem) violations.push({ path: `${path}.type`, message: typeProblem });
  if (!(origins as readonly string[]).includes(e.origin))
    violations.push({ path: `${path}.origin`, message: `must be one of ${origins.join(", ")}` });
  if (!Number.isFinite(e.timestamp)) violations.push({ path: `${path}.timestamp`, message: "must be a finite number" });
  if (e.payload && e.payloadJson)
    violations.push({ path: `${path}.payload_json`, message: "give payload or payload_json, not both" });
  // Text is stored as given: the store checks that it is JSON (InvalidPayloadJson).
  const payload = e.payloadJson || valueText(e.payload);
  if (payload === invalid) violations.push({ path: `${path}.payload`, message: "must be a JSON value" });
  if (violations.length > before || payload === invalid) return undefined;
  return { id: newId(), type: e.type, origin: e.origin, payloadJson: payload, timestamp: e.timestamp, createdAt: at };
}

const invalid = Symbol("invalid");

/** A Value as JSON text; absent is JSON null. A Value that no JSON can express (no kind, NaN) is invalid. */
function valueText(value: Value | undefined): string | typeof invalid {
  if (!value) return "null";
  try {
    return JSON.stringify(valueToJson(value));
  } catch {
    return invalid;
  }
}

/** The payload an append answers an event with: the text or the Value its writer sent (absent: JSON null). */
const sentPayload = (e: NewEvent): Value | string => e.payloadJson || (e.payload ?? nullValue);
const nullValue = jsonToValue(null);

/** A follow's keep-alive interval in milliseconds, or a violation. */
function checkKeepAlive(violations: Violation[], req: FollowEventsRequest): number {
  const interval = req.keepAliveInterval;
  if (!interval) return keepAliveBounds.defaultMs;
  const ms = durationMs(interval);
  if (!(ms >= keepAliveBounds.minMs && ms <= keepAliveBounds.maxMs)) {
    violations.push({
      path: "keep_alive_interval",
      message: `must be between ${keepAliveBounds.minMs} ms and ${keepAliveBounds.maxMs / 1000} s`,
    });
  }
  return ms;
}

/**
 * What a stream may fail with, as @loom/server's sanitizeErrors makes it for
 * unary calls: that interceptor only sees a stream start, not errors thrown
 * while it is read.
 */
function streamError(error: unknown, logger: Logger | undefined, ctx: HandlerContext): ConnectError {
  if (error instanceof ConnectError && error.code !== Code.Internal && error.code !== Code.Unknown) return error;
  if (ctx.signal.aborted) return new ConnectError("the caller went away", Code.Canceled);
  if (isDependencyDown(error)) {
    logger?.warn({ err: error, procedure: "FollowEvents" }, "dependency unavailable");
    return new ConnectError("a dependency is unavailable, try again later", Code.Unavailable);
  }
  logger?.error({ err: error, procedure: "FollowEvents" }, "unexpected error");
  return new ConnectError("internal error", Code.Internal);
}

export function createEventsService(deps: EventsDeps): RpcService {
  const { store, logger } = deps;
  const ownBus = deps.bus ? undefined : createMemoryBus();
  const bus: Bus = deps.bus ?? ownBus!;
  const now = deps.now ?? (() => new Date());
  const followTiming: FollowTiming = { ...defaultFollowTiming, ...deps.follow };
  const recent = createRecentLogs(deps.recentLogBytes ?? 16 * 1024 * 1024);

  /**
   * Keeps stored events among the recent logs, and publishes them in offset
   * order. The record is already written: a
   * lost message is the bus's at-most-once, not a failed append. Both buses
   * take a message when publish is called (NATS buffers it, the in-process bus
   * queues it), and every publish is issued before the first is awaited: so
   * the events of appends stored together (one group, docs/decisions.md) go
   * out in offset order rather than interleaved by append, and a follower has
   * no gap to read the store for.
   */
  async function publish(log: LogRef, organizationId: string, stored: Event[], closes: boolean): Promise<void> {
    recent.add(log, organizationId, stored, closes);
    const subject = subjects.events(log.runKind, log.runId);
    const sent = stored.map((event) =>
      bus
        .publish(subject, () => toBinary(EventSchema, busEvent(event)))
        .catch((error: unknown) => {
          logger?.warn({ err: error, subject, offset: Number(event.offset) }, "could not publish a stored event");
        }),
    );
    await Promise.all(sent);
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
      const closes =
        log.runKind === "assistant-run" &&
        batch.some((e) => e.origin === "SYSTEM" && terminalLifecycleEvents.has(e.type));
      const answerWhenWritten = log.runKind === "assistant-run" && deps.runLogsCoveredByRuns === true;
      let stored: AppendedEvent[] | undefined;
      try {
        stored = await store.append(log, organizationId, batch, closes);
      } catch (error) {
        // Failures too tell nothing a crash could take back (a closed log).
        if (!answerWhenWritten) await store.durable().catch(() => {});
        if (error instanceof InvalidPayloadJson)
          throw invalidArgument([{ path: `body.events[${error.index}].payload_json`, message: "must be JSON text" }]);
        throw error;
      }
      if (!answerWhenWritten) await store.durable();
      if (!stored) throw notFound(runNames[log.runKind]);
      // In the order appended: each record with the payload its writer sent, unconverted.
      const events = stored.map((record, i) => appendedEventMessage(record, sentPayload(req.events[i]!)));
      eventsAppended.inc(events.length);
      if (answerWhenWritten) {
        // Published once on disk, in the order appended (durable() resolves in the order of the writes).
        store.durable().then(
          () => publish(log, organizationId, events, closes),
          (error: unknown) =>
            logger?.error({ err: error, run_id: log.runId }, "events not published: the database could not sync them"),
        );
        return { events };
      }
      await publish(log, organizationId, events, closes);
      return { events };
    },

    async listEvents(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      const violations: Violation[] = [];
      const log = checkLog(violations, req);
      const { offset } = req;
      const limit = req.limit === 0 ? eventBounds.defaultLimit : req.limit;
      if (offset < 0n) violations.push({ path: "query.offset", message: "must be at least 0" });
      if (limit < 1 || limit > eventBounds.maxLimit)
        violations.push({ path: "query.limit", message: `must be between 1 and ${eventBounds.maxLimit}` });
      if (violations.length > 0 || !log) throw invalidArgument(violations);
      // Anything past Number.MAX_SAFE_INTEGER is past the end of every log.
      const start = offset > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(offset);
      const window = await store.list(log, organizationId, start, limit);
      // A structure run exists once written to; an assistant run is known by
      // the runs service, and one without events reads as an empty log.
      if (!window || (log.runKind === "structure-run" && window.totalCount === 0))
        throw notFound(runNames[log.runKind]);
      return { events: window.items.map((record) => eventMessage(record)), totalCount: BigInt(window.totalCount) };
    },

    async getEvent(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      const found = isUuid(req.eventId) ? await store.get(organizationId, req.eventId.toLowerCase()) : undefined;
      if (!found) throw notFound("event");
      return { event: eventMessage(found) };
    },

    async *followEvents(req, ctx) {
      try {
        const { organizationId } = requirePrincipal(ctx);
        const violations: Violation[] = [];
        const log = checkLog(violations, req);
        if (req.fromOffset < 0n) violations.push({ path: "query.offset", message: "must be at least 0" });
        const keepAliveMs = checkKeepAlive(violations, req);
        if (violations.length > 0 || !log) throw invalidArgument(violations);
        // Anything past Number.MAX_SAFE_INTEGER is past the end of every log.
        const from =
          req.fromOffset > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(req.fromOffset);
        yield* follow(
          { store, bus, timing: followTiming, recent, logger },
          {
            log,
            organizationId,
            from,
            keepAliveMs,
            batches: req.batches,
            acceptsPayloadJson: req.acceptsPayloadJson,
            signal: ctx.signal,
          },
        );
      } catch (error) {
        throw streamError(error, logger, ctx);
      }
    },

    ...spanHandlers(store),
  };

  return {
    name: "events",
    routes: (router) => router.service(EventsService, impl),
    ready: () => store.ready(),
    close: async () => {
      await store.close();
      await ownBus?.close();
    },
  };
}
