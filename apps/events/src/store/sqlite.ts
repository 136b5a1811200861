import { heldRows } from "@loom/store/held-rows";
import { dateOf, type Row, type SqliteHandle, sqliteLifecycle } from "@loom/store/sqlite";
import { logClosed } from "../log-closed.ts";
import {
  type AppendedEvent,
  type EventRecord,
  type EventsStore,
  InvalidPayloadJson,
  type LogKind,
  type LogRef,
  type NewEventRecord,
  type SpanRecord,
} from "./port.ts";

/**
 * Schema versions of the events tables (kit `migrate`): append, never edit.
 * A log is a row with its owner and whether it is closed; its length is
 * its last offset + 1, one step down the events' key (version 3: an append
 * no longer rewrites the log's row, a WAL page less for most commits). The
 * payload is JSON text: it is never queried.
 *
 * Version 2 keys events by (log, offset) alone, in a table without rowid:
 * the events of a run sit together in the one B-tree, an append writes
 * beside the log's last event, and a window is one range scan. Version 1
 * also kept a unique index of event ids; its keys are random uuids, so every
 * event dirtied a page of its own there, written to the WAL at commit: a
 * third of the WAL's writes and of an append's CPU (docs/benchmarks.md,
 * issue 15, session 11). Only structure-run events are read by id
 * (docs/behaviour.md §6), so only they are indexed by it, in `events_by_id`;
 * ids are made by the service (`newId`), unique without an index.
 */
export const eventsMigrations = [
  `CREATE TABLE events_logs (id INTEGER PRIMARY KEY, run_kind TEXT NOT NULL, run_id TEXT NOT NULL, organization_id TEXT NOT NULL,
     length INTEGER NOT NULL, closed INTEGER NOT NULL DEFAULT 0, UNIQUE (run_kind, run_id));
   CREATE TABLE events_events (id TEXT PRIMARY KEY, log_id INTEGER NOT NULL REFERENCES events_logs (id), log_offset INTEGER NOT NULL,
     type TEXT NOT NULL, origin TEXT NOT NULL, payload TEXT NOT NULL, timestamp REAL NOT NULL, created_at INTEGER NOT NULL,
     UNIQUE (log_id, log_offset));`,
  `CREATE TABLE events_by_log (log_id INTEGER NOT NULL REFERENCES events_logs (id), log_offset INTEGER NOT NULL, id TEXT NOT NULL,
     type TEXT NOT NULL, origin TEXT NOT NULL, payload TEXT NOT NULL, timestamp REAL NOT NULL, created_at INTEGER NOT NULL,
     PRIMARY KEY (log_id, log_offset)) WITHOUT ROWID;
   CREATE TABLE events_by_id (id TEXT PRIMARY KEY, log_id INTEGER NOT NULL, log_offset INTEGER NOT NULL) WITHOUT ROWID;
   INSERT INTO events_by_log SELECT log_id, log_offset, id, type, origin, payload, timestamp, created_at FROM events_events;
   INSERT INTO events_by_id SELECT e.id, e.log_id, e.log_offset FROM events_events e JOIN events_logs l ON l.id = e.log_id WHERE l.run_kind = 'structure-run';
   DROP TABLE events_events;`,
  `ALTER TABLE events_logs DROP COLUMN length;`,
  // A structure run's spans: one list per run, bound to its first writer's organization; each span is JSON text, never queried.
  `CREATE TABLE events_span_lists (run_id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, length INTEGER NOT NULL) WITHOUT ROWID;
   CREATE TABLE events_spans (run_id TEXT NOT NULL, position INTEGER NOT NULL, span TEXT NOT NULL,
     PRIMARY KEY (run_id, position)) WITHOUT ROWID;`,
];

interface LogRow {
  id: number;
  organization_id: string;
  length: number;
  closed: number;
}

/** Events one insert statement writes at most: a statement per size up to it is kept prepared. */
const rowsPerInsert = 100;

const eventColumns = "e.id, e.log_offset, e.type, e.origin, e.payload, e.timestamp, e.created_at";

/** How many log rows `createSqliteEventsStore` keeps in memory at most: past it, it forgets them all. */
const heldLogsLimit = 10_000;

/** How many closed log rows it keeps besides, most recently closed or read (past it, it forgets them all). */
const closedLogsLimit = 1_000;

/**
 * SQLite adapter (the embedded store): an append is one transaction, whatever the batch's size.
 *
 * The rows of logs appended to and not closed are also held in memory,
 * written through (the database is this process's alone, and every write to
 * a log row passes here): a run's four appends and its polls read the row
 * once, not each time (~7 µs a lookup). A log leaves memory when it closes,
 * and all of them when more than `heldLogsLimit` are held (structure-run
 * logs never close) or when writes are undone (`afterRollback`), so memory
 * follows the runs in flight, not history. The last `closedLogsLimit` closed
 * ones stay too: a run's stream and reads often come just after its end.
 */
export function createSqliteEventsStore(handle: SqliteHandle): EventsStore {
  const { prepare } = handle;
  const held = heldRows<LogRow>(handle, heldLogsLimit);
  // Closed logs never change: the most recently closed are kept too, for the streams and reads that follow a run's end.
  const closed = heldRows<LogRow>(handle, closedLogsLimit);
  const keyOf = (ref: LogRef) => `${ref.runKind}:${ref.runId}`;
  const findLog = (ref: LogRef) => {
    const key = keyOf(ref);
    const kept = held.get(key) ?? closed.get(key);
    if (kept) return kept;
    const row = prepare(
      `SELECT l.id, l.organization_id, l.closed, (SELECT coalesce(max(e.log_offset) + 1, 0) FROM events_by_log e WHERE e.log_id = l.id) AS length
       FROM events_logs l WHERE l.run_kind = ? AND l.run_id = ?`,
    ).get(ref.runKind, ref.runId) as LogRow | undefined;
    if (row) (row.closed ? closed : held).hold(key, logCopy(row, row.length, row.closed));
    return row;
  };
  /** The store's own copy of a log's row (node:sqlite's rows are not ours to keep changing). */
  const logCopy = (row: LogRow, length: number, isClosed: number): LogRow => ({
    id: row.id,
    organization_id: row.organization_id,
    length,
    closed: isClosed,
  });
  const eventOf = (row: Row, ref: LogRef, organizationId: string): EventRecord => ({
    id: row.id as string,
    runKind: ref.runKind,
    runId: ref.runId,
    organizationId,
    offset: row.log_offset as number,
    type: row.type as string,
    origin: row.origin as string,
    payload: JSON.parse(row.payload as string),
    timestamp: row.timestamp as number,
    createdAt: dateOf(row.created_at)!,
  });

  /** The insert of `rows` events at once, each stored only if its payload is JSON (a row that is not is left out). */
  const insertEvents = (rows: number) =>
    prepare(
      `INSERT INTO events_by_log (log_id, log_offset, id, type, origin, payload, timestamp, created_at)
       SELECT * FROM (VALUES ${Array.from({ length: rows }, () => "(?, ?, ?, ?, ?, ?, ?, ?)").join(", ")}) WHERE json_valid(column6)`,
    );
  const insertIds = (rows: number) =>
    prepare(
      `INSERT INTO events_by_id (id, log_id, log_offset) VALUES ${Array.from({ length: rows }, () => "(?, ?, ?)").join(", ")}`,
    );
  /** The index of the first event whose payload is not JSON, as SQLite judges it. */
  const firstNotJson = (events: NewEventRecord[]) =>
    events.findIndex((e) => (prepare("SELECT json_valid(?) AS ok").get(e.payloadJson) as { ok: number }).ok === 0);

  return {
    ...sqliteLifecycle(handle, "events", eventsMigrations),
    durable: () => handle.durable(),

    // Synchronous from call to commit: appends from this process are stored in the order they were made.
    async append(ref, organizationId, batch, closes = false) {
      if (batch.length === 0) throw new Error("an append needs at least one event");
      return handle.transaction(() => {
        const log =
          findLog(ref) ??
          (prepare(
            "INSERT INTO events_logs (run_kind, run_id, organization_id) VALUES (?, ?, ?) RETURNING id, organization_id, 0 AS length, closed",
          ).get(ref.runKind, ref.runId, organizationId) as unknown as LogRow);
        if (log.organization_id !== organizationId) return undefined;
        if (log.closed) throw logClosed();
        // Many rows a statement: one call per chunk rather than per event (a third of the SQL's CPU).
        for (let start = 0; start < batch.length; start += rowsPerInsert) {
          const chunk = batch.slice(start, start + rowsPerInsert);
          const params: Array<string | number> = [];
          chunk.forEach((e, i) =>
            params.push(
              log.id,
              log.length + start + i,
              e.id,
              e.type,
              e.origin,
              e.payloadJson,
              e.timestamp,
              e.createdAt.getTime(),
            ),
          );
          // Stored only if SQLite's own check finds every payload JSON: the text is bound once, and no objects are built for it.
          const { changes } = insertEvents(chunk.length).run(...params);
          if (Number(changes) < chunk.length) throw new InvalidPayloadJson(start + firstNotJson(chunk));
          if (ref.runKind === "structure-run")
            insertIds(chunk.length).run(...chunk.flatMap((e, i) => [e.id, log.id, log.length + start + i]));
        }
        const stored = batch.map(
          (e, i): AppendedEvent => ({
            id: e.id,
            ...ref,
            organizationId,
            offset: log.length + i,
            type: e.type,
            origin: e.origin,
            timestamp: e.timestamp,
            createdAt: new Date(e.createdAt.getTime()),
          }),
        );
        const length = log.length + batch.length;
        if (closes) prepare("UPDATE events_logs SET closed = 1 WHERE id = ?").run(log.id);
        const key = keyOf(ref);
        const kept = held.get(key);
        if (closes) {
          held.forget(key);
          closed.hold(key, logCopy(log, length, 1));
        } else if (kept)
          kept.length = length; // the held row is the store's own copy (findLog hands it out only within a call)
        else held.hold(key, logCopy(log, length, 0));
        return stored;
      });
    },

    async list(ref, organizationId, offset, limit) {
      const log = findLog(ref);
      if (!log) return { items: [], totalCount: 0 };
      if (log.organization_id !== organizationId) return undefined;
      if (offset >= log.length || limit <= 0) return { items: [], totalCount: log.length };
      // Offsets are dense (0..length-1): a window is a range of them. A bound `LIMIT ?` made this read three times
      // as costly in SQLite, and every follow starts with it.
      const rows = prepare(
        `SELECT ${eventColumns} FROM events_by_log e WHERE e.log_id = ? AND e.log_offset BETWEEN ? AND ? ORDER BY e.log_offset`,
      ).all(log.id, offset, offset + limit - 1);
      return { items: rows.map((row) => eventOf(row, ref, organizationId)), totalCount: log.length };
    },

    async get(organizationId, eventId) {
      const row = prepare(
        `SELECT ${eventColumns}, l.run_kind, l.run_id FROM events_by_id b
           JOIN events_by_log e ON e.log_id = b.log_id AND e.log_offset = b.log_offset JOIN events_logs l ON l.id = b.log_id
         WHERE b.id = ? AND l.organization_id = ? AND l.run_kind = 'structure-run'`,
      ).get(eventId, organizationId);
      return row && eventOf(row, { runKind: row.run_kind as LogKind, runId: row.run_id as string }, organizationId);
    },

    async appendSpans(runId, organizationId, spans) {
      if (spans.length === 0) throw new Error("an append needs at least one span");
      return handle.transaction(() => {
        const list = (prepare("SELECT organization_id, length FROM events_span_lists WHERE run_id = ?").get(runId) as
          | { organization_id: string; length: number }
          | undefined) ?? { organization_id: organizationId, length: 0 };
        if (list.organization_id !== organizationId) return undefined;
        const insert = prepare("INSERT INTO events_spans (run_id, position, span) VALUES (?, ?, ?)");
        spans.forEach((span, i) => insert.run(runId, list.length + i, JSON.stringify(span)));
        prepare(
          `INSERT INTO events_span_lists (run_id, organization_id, length) VALUES (?, ?, ?)
           ON CONFLICT (run_id) DO UPDATE SET length = excluded.length`,
        ).run(runId, organizationId, list.length + spans.length);
        return true as const;
      });
    },

    async listSpans(runId, organizationId, skip, limit) {
      const list = prepare("SELECT length FROM events_span_lists WHERE run_id = ? AND organization_id = ?").get(
        runId,
        organizationId,
      ) as { length: number } | undefined;
      if (!list) return undefined;
      // Positions are dense, as offsets are (list, above).
      const rows = prepare(
        "SELECT span FROM events_spans WHERE run_id = ? AND position BETWEEN ? AND ? ORDER BY position",
      ).all(runId, skip, skip + limit - 1);
      return { items: rows.map((row) => JSON.parse(row.span as string) as SpanRecord), totalCount: list.length };
    },
  };
}
