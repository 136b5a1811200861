import { create, fromBinary } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { Bus } from "@loom/bus/bus";
import { notFound } from "@loom/contracts/errors";
// An assistant run's terminal lifecycle event closes its log (docs/behaviour.md §6): once one is
// stored, nothing more is appended, so a stream that ends after it has seen everything.
import { terminalLifecycleEvents } from "@loom/contracts/run-lifecycle";
import { subjects } from "@loom/contracts/subjects";
import {
  type Event,
  EventBatchSchema,
  EventSchema,
  type FollowEventsResponse,
  FollowEventsResponseSchema,
} from "@loom/proto/events/v1/events_pb";
import type { Logger } from "@loom/telemetry/logger";
import { traceparentOf } from "@loom/telemetry/tracing";
import { busEvent, eventMessage } from "./event-message.ts";
import type { RecentLogs } from "./recent-logs.ts";
import type { EventsStore, LogKind, LogRef } from "./store/port.ts";

/** The event types after which a structure-run stream ends (docs/behaviour.md §6). */
export const structureRunEndEvents: ReadonlySet<string> = new Set(["StructureRunCompleted", "StructureRunError"]);

/** True for the event that ends a stream of a log of this kind: nothing is sent after it. */
export function endsStream(kind: LogKind, event: { type: string; origin: string }): boolean {
  return kind === "assistant-run"
    ? event.origin === "SYSTEM" && terminalLifecycleEvents.has(event.type)
    : structureRunEndEvents.has(event.type);
}

/** Knobs of a follow; the defaults suit production, tests shorten them. */
export interface FollowTiming {
  /** Events read from the store at once, replaying or filling a gap. */
  pageSize: number;
  /**
   * How long an offset may stay missing while later ones are known before
   * the stream skips it as a hole (docs/decisions.md, Events: "Holes").
   */
  holeGraceMs: number;
  /** First wait before the store is read again for a missing offset; doubles up to `maxRetryMs`. */
  retryMs: number;
  maxRetryMs: number;
  /** Live events buffered ahead of the stream; beyond it they are left to the store (a slow reader cannot grow memory). */
  maxBuffered: number;
}

export const defaultFollowTiming: FollowTiming = {
  pageSize: 500,
  holeGraceMs: 5_000,
  retryMs: 20,
  maxRetryMs: 1_000,
  maxBuffered: 10_000,
};

export interface FollowDeps {
  store: EventsStore;
  bus: Bus;
  timing: FollowTiming;
  /** Logs this replica wrote lately: a closed one is served from them. */
  recent?: RecentLogs | undefined;
  logger?: Logger | undefined;
}

export interface FollowRequest {
  log: LogRef;
  organizationId: string;
  /** First offset to send. */
  from: number;
  keepAliveMs: number;
  /** Events at hand together go in one `batch` message, and the first message is the log's events from `from` (events.proto). */
  batches: boolean;
  /** The caller reads `payload_json`: a payload held as text is sent so (events.proto). */
  acceptsPayloadJson: boolean;
  /** Aborts when the caller goes away: everything is released at once, whether or not the stream is read again. */
  signal: AbortSignal;
}

const runNames: Record<LogKind, string> = { "assistant-run": "assistant run", "structure-run": "structure run" };

const keepAlive = (): FollowEventsResponse =>
  create(FollowEventsResponseSchema, { kind: { case: "keepAlive", value: {} } });
const eventResponse = (event: Event): FollowEventsResponse =>
  create(FollowEventsResponseSchema, { kind: { case: "event", value: event } });
const batchResponse = (events: Event[], last: boolean): FollowEventsResponse =>
  create(FollowEventsResponseSchema, { kind: { case: "batch", value: create(EventBatchSchema, { events, last }) } });
/** Consecutive events as the caller reads them: one batch, or without batches the one event. */
const messageOf = (events: Event[], last: boolean, batches: boolean): FollowEventsResponse =>
  batches ? batchResponse(events, last) : eventResponse(events[0]!);

/**
 * One FollowEvents stream: a keep-alive once the log is resolved, then the
 * log from `from` in strict offset order, each offset at most once, until the
 * terminal event (docs/decisions.md, Events: "Following a log").
 *
 * The stream keeps one cursor, `next` (the offset it sends next), and a
 * buffer of events at offsets ≥ `next`, fed by the bus and by store reads
 * alike. It only ever sends `buffered[next]` and then moves `next` on, so an
 * offset is sent once and in order wherever it came from. The subscription
 * is in place before the first store read, and an event is published only
 * after it is stored, so every event is either in that read or on the bus.
 * When `next` is missing while later offsets are known (a replay page, a live
 * event from another replica that overtook an earlier one, a lost bus
 * message), the store is read from `next`; an offset still missing after
 * `holeGraceMs` is a hole and is skipped.
 *
 * With `batches`, what is buffered from `next` on goes out as one message
 * (at most a page of events): a replay of a finished log is then one
 * message after the first read, in place of the first keep-alive.
 */
export async function* follow(
  deps: FollowDeps,
  req: FollowRequest,
): AsyncGenerator<FollowEventsResponse, void, undefined> {
  const { store, bus, timing, logger } = deps;
  const { log, organizationId, keepAliveMs, batches, acceptsPayloadJson, signal } = req;
  /** Events a message carries at most. */
  const perMessage = batches ? timing.pageSize : 1;
  const held = deps.recent?.closedFrom(log, organizationId, req.from);
  if (held) {
    yield* heldLog(acceptsPayloadJson ? held : held.map(busEvent), batches, perMessage, signal);
    return;
  }
  const subject = subjects.events(log.runKind, log.runId);

  /** The offset sent next. */
  let next = req.from;
  /** Events at offsets ≥ next, by offset. */
  const buffered = new Map<number, Event>();
  /** One past the highest offset known to be handed out: the store's count, or a live event's offset. */
  let known = 0;
  let closed = false;
  /** Ends the current pause early (a live event, or the end). */
  let wake: (() => void) | undefined;

  const take = (event: Event, live: boolean) => {
    const offset = Number(event.offset);
    if (offset < next || buffered.has(offset)) return;
    known = Math.max(known, offset + 1);
    // A dropped live event is stored (it is published after that): `known` sends the stream to read it.
    if (live && buffered.size >= timing.maxBuffered) return;
    buffered.set(offset, event);
  };

  const subscription = bus.subscribe(subject, (data) => {
    if (closed) return;
    try {
      const event = fromBinary(EventSchema, data);
      // Inside the bus delivery's span (the append's trace): the gateway's SSE delivery continues it.
      const traceparent = traceparentOf();
      if (traceparent) event.traceparent = traceparent;
      take(event, true);
    } catch (error) {
      logger?.warn({ err: error, subject }, "could not decode a live event");
      return;
    }
    wake?.();
  });
  /** Set when the bus came back from an outage: what it lost meanwhile is in the store. */
  let busReconnected = false;
  const reconnection = bus.onReconnect(() => {
    busReconnected = true;
    wake?.();
  });
  const close = () => {
    if (closed) return;
    closed = true;
    subscription.unsubscribe();
    reconnection.unsubscribe();
    buffered.clear();
    signal.removeEventListener("abort", close);
    wake?.();
  };
  // Released on abort directly: a stream parked at a `yield` may never be resumed.
  signal.addEventListener("abort", close);
  if (signal.aborted) close();

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      if (closed) return resolve();
      const done = () => {
        clearTimeout(timer);
        if (wake === done) wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, Math.max(1, ms));
      wake = done;
    });

  let lastRead = 0;
  /** The catch-up read after a silence, while it runs (it runs beside the stream, see below). */
  let silenceRead: Promise<void> | undefined;
  /** Reads the store from `next` into the buffer. */
  const read = async () => {
    const window = await store.list(log, organizationId, next, timing.pageSize);
    if (!window) throw notFound(runNames[log.runKind]);
    lastRead = Date.now();
    known = Math.max(known, window.totalCount);
    for (const record of window.items) take(eventMessage(record), false);
  };

  /** Whether the log's stream already ended before `from`, in a log of `total` offsets. */
  const endedBefore = async (total: number): Promise<boolean> => {
    const end = Math.min(req.from, total);
    // An assistant run's terminal event closes its log: it can only be the last one.
    if (end === 0 || (log.runKind === "assistant-run" && end < total)) return false;
    const last = await store.list(log, organizationId, end - 1, 1);
    if (last?.items.some((e) => endsStream(log.runKind, e))) return true;
    if (log.runKind === "assistant-run") return false;
    // A structure run's log may go on after its end event: look for it before `from`.
    for (let offset = 0; offset < end - 1 && !closed; offset += timing.pageSize) {
      const page = await store.list(log, organizationId, offset, Math.min(timing.pageSize, end - 1 - offset));
      if (page?.items.some((e) => endsStream(log.runKind, e))) return true;
    }
    return false;
  };

  /**
   * The buffered events from `next` on, up to the end of the stream and at
   * most `perMessage`, as one message (moving `next` past them), and whether
   * it ends the stream.
   */
  const nextMessage = (): { message: FollowEventsResponse; last: boolean } | undefined => {
    const events: Event[] = [];
    let last = false;
    for (let event = buffered.get(next); event && !last && events.length < perMessage; event = buffered.get(next)) {
      buffered.delete(next);
      next += 1;
      events.push(event);
      last = endsStream(log.runKind, event);
    }
    return events.length > 0 ? { message: messageOf(events, last, batches), last } : undefined;
  };

  try {
    // On NATS a subscription is registered by the server asynchronously; a
    // round trip (what ready() does) makes sure it is before the store is read.
    if (!(await bus.ready()))
      logger?.warn({ subject }, "the bus is not ready: this follow sees new events at keep-alive intervals only");
    if (closed) return;
    const first = await store.list(log, organizationId, next, timing.pageSize);
    // Another organization's log, or a structure run never written to.
    if (!first || (log.runKind === "structure-run" && first.totalCount === 0)) throw notFound(runNames[log.runKind]);
    lastRead = Date.now();
    known = Math.max(known, first.totalCount);
    for (const record of first.items) take(eventMessage(record), false);
    const ended = await endedBefore(first.totalCount);
    if (closed) return;

    const opening = batches && !ended ? nextMessage() : undefined;
    yield opening?.message ?? keepAlive();
    let lastSent = Date.now();
    if (ended || closed || opening?.last) return;

    /** The `next` last found missing, since when, and how long to wait before reading the store for it again. */
    let stalledAt = -1;
    let stalledSince = 0;
    let retryMs = timing.retryMs;

    for (;;) {
      for (let taken = nextMessage(); taken; taken = nextMessage()) {
        yield taken.message;
        lastSent = Date.now();
        if (closed || taken.last) return;
      }
      if (closed) return;

      if (busReconnected) {
        // Events published while the bus was down never arrive: read them now, not at the next keep-alive.
        busReconnected = false;
        await read();
        if (closed) return;
        continue;
      }

      const now = Date.now();
      if (now - lastSent >= keepAliveMs) {
        // Silence: the keep-alive goes now, and the store is read for anything the bus lost
        // (it is at most once) beside the stream: a slow store never holds a keep-alive back,
        // and what the read finds is sent right after it.
        yield keepAlive();
        lastSent = Date.now();
        if (closed) return;
        silenceRead ??= read()
          .then(
            () => wake?.(),
            (error: unknown) =>
              logger?.warn({ err: error, subject }, "a follow's catch-up read failed; the next silence tries again"),
          )
          .finally(() => (silenceRead = undefined));
        continue;
      }

      let waitMs = keepAliveMs - (now - lastSent);
      if (known > next) {
        // Offsets from `next` on exist, or are being written, and `next` is not here.
        if (stalledAt !== next) {
          stalledAt = next;
          stalledSince = now;
          retryMs = timing.retryMs;
          await read();
          continue;
        }
        const ahead = lowestBuffered(buffered);
        if (ahead !== undefined) {
          // The hole's age: since it was found, or since the event after it was stored, whichever is older
          // (a replay over an old hole need not wait out the grace).
          const after = buffered.get(ahead)?.createdAt;
          const since = Math.min(stalledSince, after ? timestampMs(after) : stalledSince);
          if (now - since >= timing.holeGraceMs) {
            // A last look, then skip what the store still does not have.
            await read();
            if (closed) return;
            if (!buffered.has(next)) {
              const to = lowestBuffered(buffered)!;
              logger?.warn({ subject, from: next, to }, "skipping a hole in an event log");
              next = to;
            }
            continue;
          }
          waitMs = Math.min(waitMs, since + timing.holeGraceMs - now);
        }
        if (ahead !== undefined || now - stalledSince < timing.holeGraceMs) {
          if (now >= lastRead + retryMs) {
            retryMs = Math.min(retryMs * 2, timing.maxRetryMs);
            await read();
            continue;
          }
          waitMs = Math.min(waitMs, lastRead + retryMs - now);
        }
        // Else only the log's count is past `next`, for longer than the grace: a batch still being
        // written at the end of the log, or a hole there. Its events, or the next ones, come live,
        // and every keep-alive reads the store again.
      }
      await pause(waitMs);
      if (closed) return;
    }
  } finally {
    close();
  }
}

/** A closed log's events held in memory, sent as a follow sends them, and the end. */
function* heldLog(events: Event[], batches: boolean, perMessage: number, signal: AbortSignal) {
  if (!batches || events.length === 0) yield keepAlive();
  for (let at = 0; at < events.length && !signal.aborted; at += perMessage) {
    const page = events.slice(at, at + perMessage);
    yield messageOf(page, at + page.length === events.length, batches);
  }
}

function lowestBuffered(buffered: Map<number, Event>): number | undefined {
  let lowest: number | undefined;
  for (const offset of buffered.keys()) if (lowest === undefined || offset < lowest) lowest = offset;
  return lowest;
}
