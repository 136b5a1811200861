import { setTimeout as sleep } from "node:timers/promises";
import { unavailable } from "@loom/contracts/errors";
import { newId } from "@loom/contracts/ids";
import { type Doc, fromDoc, isDuplicateKey, toDoc } from "@loom/store/mongo";
import type { Collection, Db } from "mongodb";
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
 * An event as stored. The payload is kept as JSON text: it is never queried,
 * and a JSON object's keys may be anything ("$set", "a.b", "") while document
 * field names may not.
 */
type EventDoc = Omit<Doc<EventRecord>, "payload"> & { payload: string };

/**
 * One append's claim on the offsets [first, next) of a log. `_id` is the log
 * and `first`, so two appends can never claim the same start; an append only
 * ever starts where the last claim it read ends, so the claims of a log form
 * one chain 0 → next → next ... without gap or overlap. The claim at 0 binds
 * the log to its organization; every later one copies it.
 */
interface ClaimDoc {
  _id: string;
  runKind: LogKind;
  runId: string;
  organizationId: string;
  first: number;
  next: number;
  /** This claim's batch ended the log: nothing may follow it. */
  closed?: boolean;
}

/** Whose a structure run's spans are: written once, by the first batch. */
interface SpanListDoc {
  _id: string;
  organizationId: string;
}

/**
 * One stored span. A run's spans sort by (at, batch, index): a batch's
 * spans share `at` and `batch`, so concurrent batches never interleave, from
 * any replica. `at` is when the batch was stored, in milliseconds with the
 * fraction `performance.now()` gives, and rises with every batch of the
 * process: batches sent one after the other list in that order (through
 * different replicas, as far as their clocks agree). The span is JSON text,
 * for the reason the payload of an event is.
 */
interface SpanDoc {
  _id: string;
  runId: string;
  at: number;
  batch: string;
  index: number;
  span: string;
}

/** The end of a log as a claim leaves it. */
type LogEnd = Pick<ClaimDoc, "organizationId" | "next" | "closed">;

/** Logs whose end a process remembers (docs/decisions.md, "Events"). */
const knownEndsMax = 10_000;

/** Appends racing for one log retry this often before the caller is told to try again. */
const claimAttempts = 50;

/** Events a group writes at most: one insert stays a bounded request. */
const maxGroupEvents = 10_000;

/** An append waiting for its log's current group to be written. */
interface WaitingAppend {
  organizationId: string;
  batch: NewEventRecord[];
  closes: boolean;
  resolve: (stored: AppendedEvent[] | undefined) => void;
  reject: (error: unknown) => void;
}

/**
 * Takes the next group off the front of `waiting`: appends of one
 * organization (the claim checks one owner), ending at the first that closes
 * the log (the ones after it must find it closed), at most maxGroupEvents
 * events (always at least one append).
 */
function nextGroup(waiting: WaitingAppend[]): WaitingAppend[] {
  let events = 0;
  let size = 0;
  for (const append of waiting) {
    if (
      size > 0 &&
      (append.organizationId !== waiting[0]!.organizationId || events + append.batch.length > maxGroupEvents)
    )
      break;
    size += 1;
    events += append.batch.length;
    if (append.closes) break;
  }
  return waiting.splice(0, size);
}

/**
 * MongoDB adapter without transactions and without relying on atomic
 * read-modify-write updates (FerretDB, the test server, lacks both): offsets
 * are claimed by inserting a unique claim document, then the events are
 * inserted under a unique index on (runKind, runId, offset).
 */
export function createMongoEventsStore(db: Db, ping: () => Promise<boolean>, close: () => Promise<void>): EventsStore {
  const events: Collection<EventDoc> = db.collection("events");
  const claims: Collection<ClaimDoc> = db.collection("claims");
  const spanLists: Collection<SpanListDoc> = db.collection("span_lists");
  const spans: Collection<SpanDoc> = db.collection("spans");
  let lastStoredAt = 0;

  const toEventDoc = ({ payloadJson, ...e }: AppendedEvent & Pick<NewEventRecord, "payloadJson">): EventDoc => ({
    ...toDoc(e),
    payload: payloadJson,
  });
  const fromEventDoc = (d: EventDoc): EventRecord => ({
    ...fromDoc<Omit<EventRecord, "payload"> & { payload: string }>(d)!,
    payload: JSON.parse(d.payload),
  });

  /** The newest claim of a log: its owner and its length. */
  const lastClaim = (ref: LogRef) =>
    claims.findOne({ runKind: ref.runKind, runId: ref.runId }, { sort: { first: -1 } });

  /**
   * Where each log ended after this process's last claim on it. Usually still
   * the end, so an append needs no read first (on FerretDB that read scans,
   * and it is a round trip everywhere). If another replica appended since,
   * a claim at the remembered end collides with that replica's claim (every
   * start in the chain has one) and the end is read again; the owner and a
   * closed end never change. Oldest first out beyond knownEndsMax logs.
   */
  const knownEnds = new Map<string, LogEnd>();
  const remember = (key: string, end: LogEnd) => {
    knownEnds.delete(key);
    if (knownEnds.size >= knownEndsMax) knownEnds.delete(knownEnds.keys().next().value!);
    knownEnds.set(key, end);
  };

  /** Claims `count` offsets at the end of the log; the first of them, or undefined when another organization owns the log. */
  async function claim(
    ref: LogRef,
    organizationId: string,
    count: number,
    closes: boolean,
  ): Promise<number | undefined> {
    const key = `${ref.runKind}:${ref.runId}`;
    for (let attempt = 1; attempt <= claimAttempts; attempt++) {
      const last = knownEnds.get(key) ?? (await lastClaim(ref)) ?? undefined;
      if (last && last.organizationId !== organizationId) return undefined;
      // The chain serializes appends, so an append that lost the race to a closing one sees it here.
      if (last?.closed) throw logClosed();
      const first = last?.next ?? 0;
      try {
        await claims.insertOne({
          _id: `${key}:${first}`,
          ...ref,
          organizationId,
          first,
          next: first + count,
          ...(closes ? { closed: true } : {}),
        });
        remember(key, { organizationId, next: first + count, closed: closes });
        return first;
      } catch (error) {
        knownEnds.delete(key);
        if (!isDuplicateKey(error)) throw error;
        // Another append took this start first: read the new end and try after it.
        if (attempt > 2) await sleep(Math.random() * Math.min(attempt, 20));
      }
    }
    throw unavailable("too many concurrent appends to this log, try again");
  }

  /**
   * Appends to one log from this process are written one group at a time
   * (docs/decisions.md, Events: "A replica's appends to one log queue up, and
   * go in groups"):
   * those that arrive while a group is being written wait, and go together as
   * the next group, with one claim and one insert. So they never race each
   * other through the database, their offsets follow the order they were
   * made, and a busy log costs two writes per group instead of per append.
   *
   * Per log being written: the appends waiting for the current group to
   * finish. A log is here exactly while a writer runs for it.
   */
  const waitingAppends = new Map<string, WaitingAppend[]>();

  async function writeWaiting(key: string, ref: LogRef, waiting: WaitingAppend[]): Promise<void> {
    try {
      while (waiting.length > 0) await writeGroup(ref, nextGroup(waiting));
    } finally {
      // Nothing runs between the last check and this: an append made after it starts a new writer.
      waitingAppends.delete(key);
    }
  }

  /** Stores a group's events at consecutive offsets, in the order its appends were made; each append gets its own. */
  async function writeGroup(ref: LogRef, group: WaitingAppend[]): Promise<void> {
    const { organizationId } = group[0]!;
    try {
      const count = group.reduce((n, a) => n + a.batch.length, 0);
      const first = await claim(ref, organizationId, count, group.at(-1)!.closes);
      if (first === undefined) {
        group.forEach((a) => a.resolve(undefined));
        return;
      }
      let offset = first;
      const stored = group.map((a) => a.batch.map((e) => ({ ...e, ...ref, organizationId, offset: offset++ })));
      const all = stored.flat();
      try {
        await events.insertMany(all.map(toEventDoc), { ordered: true });
      } catch (error) {
        // The callers are told nothing was written: take back what was (best
        // effort). The claimed offsets stay unused (docs/decisions.md). Not
        // awaited: a database that stopped answering would hold the callers
        // for a second timeout.
        void events.deleteMany({ _id: { $in: all.map((e) => e.id) } }).catch(() => {});
        throw error;
      }
      group.forEach((a, i) => a.resolve(stored[i]!.map(({ payloadJson: _, ...e }) => e)));
    } catch (error) {
      group.forEach((a) => a.reject(error));
    }
  }

  return {
    durable: async () => {},
    async init() {
      await claims.createIndex({ runKind: 1, runId: 1, first: -1 });
      await events.createIndex({ runKind: 1, runId: 1, offset: 1 }, { unique: true });
      await spans.createIndex({ runId: 1, at: 1, batch: 1, index: 1 });
    },
    ready: ping,
    close,

    append(ref, organizationId, batch, closes = false) {
      if (batch.length === 0) return Promise.reject(new Error("an append needs at least one event"));
      // Checked before the append joins a group: a bad one fails alone, and writes nothing.
      const invalid = batch.findIndex((e) => !isJsonText(e.payloadJson));
      if (invalid !== -1) return Promise.reject(new InvalidPayloadJson(invalid));
      return new Promise((resolve, reject) => {
        const key = `${ref.runKind}:${ref.runId}`;
        const append = { organizationId, batch, closes, resolve, reject };
        const waiting = waitingAppends.get(key);
        if (waiting) return void waiting.push(append);
        const first = [append];
        waitingAppends.set(key, first);
        void writeWaiting(key, ref, first);
      });
    },

    async list(ref, organizationId, offset, limit) {
      const last = await lastClaim(ref);
      if (!last) return { items: [], totalCount: 0 };
      if (last.organizationId !== organizationId) return undefined;
      if (offset >= last.next) return { items: [], totalCount: last.next };
      const docs = await events
        .find({ runKind: ref.runKind, runId: ref.runId, offset: { $gte: offset, $lt: offset + limit } })
        .sort({ offset: 1 })
        .toArray();
      return { items: docs.map(fromEventDoc), totalCount: last.next };
    },

    async get(organizationId, eventId) {
      const doc = await events.findOne({ _id: eventId, organizationId, runKind: "structure-run" });
      return doc ? fromEventDoc(doc) : undefined;
    },

    async appendSpans(runId, organizationId, batch) {
      if (batch.length === 0) throw new Error("an append needs at least one span");
      const owner = await spanListOwner(runId, organizationId);
      if (owner !== organizationId) return undefined;
      const at = storedAt();
      const id = newId();
      const docs = batch.map((span, index) => ({
        _id: `${id}:${index}`,
        runId,
        at,
        batch: id,
        index,
        span: JSON.stringify(span),
      }));
      try {
        await spans.insertMany(docs, { ordered: true });
      } catch (error) {
        // All or nothing, as an event append: take back what was written (best effort, not awaited).
        void spans.deleteMany({ batch: id }).catch(() => {});
        throw error;
      }
      return true;
    },

    async listSpans(runId, organizationId, skip, limit) {
      const list = await spanLists.findOne({ _id: runId });
      if (list?.organizationId !== organizationId) return undefined;
      const [docs, totalCount] = await Promise.all([
        spans.find({ runId }).sort({ at: 1, batch: 1, index: 1 }).skip(skip).limit(limit).toArray(),
        spans.countDocuments({ runId }),
      ]);
      return { items: docs.map((d) => JSON.parse(d.span) as SpanRecord), totalCount };
    },
  };

  /** A SpanDoc's `at`: now, and after every earlier one of this process. */
  function storedAt(): number {
    lastStoredAt = Math.max(performance.timeOrigin + performance.now(), lastStoredAt + 0.001);
    return lastStoredAt;
  }

  /** The organization a run's spans belong to: the caller's when it writes first (two first writers race on the unique _id). */
  async function spanListOwner(runId: string, organizationId: string): Promise<string | undefined> {
    const known = await spanLists.findOne({ _id: runId });
    if (known) return known.organizationId;
    try {
      await spanLists.insertOne({ _id: runId, organizationId });
      return organizationId;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      return (await spanLists.findOne({ _id: runId }))?.organizationId;
    }
  }
}

function isJsonText(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
