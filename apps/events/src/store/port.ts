import type { Page } from "@loom/contracts/paging";
import type { StoreLifecycle } from "@loom/store/open";

/** The two kinds of event log (docs/behaviour.md §6), named as in bus subjects. */
export type LogKind = "assistant-run" | "structure-run";

/** One run's log. `runId` is a lower-case uuid. */
export interface LogRef {
  runKind: LogKind;
  runId: string;
}

/** Any JSON value (an event's payload). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** An event as stored: its writer's fields plus where it sits in which log. */
export interface EventRecord {
  id: string;
  runKind: LogKind;
  runId: string;
  organizationId: string;
  /** 0-based position in the run's log. */
  offset: number;
  type: string;
  origin: string;
  /** JSON null when the writer gave none. */
  payload: JsonValue;
  /** Seconds since the epoch, exactly as the writer sent it. */
  timestamp: number;
  createdAt: Date;
}

/**
 * What an append brings; the store adds the log, the organization and the
 * offset. The payload comes as JSON text and is stored as given: a run's
 * prompt arrives as text and is never converted (docs/decisions.md, "Event
 * payloads travel as JSON text").
 */
export type NewEventRecord = Pick<EventRecord, "id" | "type" | "origin" | "timestamp" | "createdAt"> & {
  payloadJson: string;
};

/** An event as an append stored it: its payload is the one the append brought. */
export type AppendedEvent = Omit<EventRecord, "payload">;

/** An append whose event `index` (in its batch) has a `payloadJson` that is not JSON text: nothing of it was written. */
export class InvalidPayloadJson extends Error {
  readonly index: number;
  constructor(index: number) {
    super(`event ${index}'s payload is not JSON text`);
    this.index = index;
  }
}

/** A window of one log and the log's length. */
export interface LogWindow {
  items: EventRecord[];
  /** Offsets the log has handed out: one past the last event's offset. */
  totalCount: number;
}

/** A JSON object (span and span-event attributes). */
export type JsonObject = { [key: string]: JsonValue };

/** One event of a span, as its writer sent it. */
export interface SpanEventRecord {
  name: string;
  /** RFC 3339, as sent. */
  timestamp: string;
  attributes: JsonObject;
}

/** A structure run's trace span as its writer sent it (docs/behaviour.md §6). */
export interface SpanRecord {
  spanId: string;
  traceId: string;
  /** Absent for a root span. */
  parentId?: string;
  name: string;
  /** RFC 3339, as sent. */
  startTime: string;
  endTime: string;
  status: "OK" | "ERROR" | "UNSET";
  attributes: JsonObject;
  events: SpanEventRecord[];
}

/**
 * Append-only logs, one per (runKind, runId). A log belongs to the
 * organization of its first append; for every other organization it does not
 * exist (reads and appends answer `undefined`).
 */
export interface EventsStore extends StoreLifecycle {
  /**
   * Resolves once every write made so far is on disk. An append may resolve
   * before (on SQLite it does: `openEventsStore`); the service awaits this
   * before it answers or publishes, so nothing a crash could take back is
   * told or sent. Reads resolve only once what they read is on disk. On
   * MongoDB every write is acknowledged by the server already.
   */
  durable(): Promise<void>;
  /**
   * Stores a non-empty batch at consecutive offsets, in batch order, after
   * everything appended before; concurrent appends to one log (from any
   * number of replicas) never share or skip an offset. Creates the log, bound
   * to `organizationId`, on its first append. `undefined`: the log belongs to
   * another organization, and nothing was written. A batch with `closes` is
   * the log's last: every later append is refused with FAILED_PRECONDITION
   * (an assistant run's log ends with its terminal lifecycle event). A
   * payload that is not JSON text refuses the batch with InvalidPayloadJson.
   */
  append(
    log: LogRef,
    organizationId: string,
    events: NewEventRecord[],
    closes?: boolean,
  ): Promise<AppendedEvent[] | undefined>;
  /**
   * The events with offsets in [offset, offset + limit), in offset order. A
   * log never appended to is empty (totalCount 0); `undefined`: the log
   * belongs to another organization.
   */
  list(log: LogRef, organizationId: string, offset: number, limit: number): Promise<LogWindow | undefined>;
  /** One structure-run event of the organization; assistant-run events are never found here (docs/behaviour.md §6). */
  get(organizationId: string, eventId: string): Promise<EventRecord | undefined>;
  /**
   * Stores a non-empty batch of a structure run's spans after the ones stored
   * before, in batch order; concurrent batches never interleave. The run's
   * spans belong to the organization of their first batch (apart from its
   * event log): `undefined` for another organization, and nothing written.
   */
  appendSpans(runId: string, organizationId: string, spans: SpanRecord[]): Promise<true | undefined>;
  /**
   * `limit` spans of the run from the `skip`th, in the order stored, and how
   * many it has; `undefined` when the organization stored none for it.
   */
  listSpans(runId: string, organizationId: string, skip: number, limit: number): Promise<Page<SpanRecord> | undefined>;
}
