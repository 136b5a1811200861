import type { JsonObject } from "@bufbuild/protobuf";
import { type Doc, fromDoc, isDuplicateKey, newestFirstSort, toDoc } from "@loom/store/mongo";
import type { Collection, Db, Filter, UpdateFilter } from "mongodb";
import { type IdempotencyRecord, idempotencyWindowMs } from "./idempotency.ts";
import { createMongoThreads } from "./mongo-threads.ts";
import { type PendingApproval, pausedUnsettled, unsettled } from "./pending-approval.ts";
import type { RunsStore } from "./port.ts";
import type { QueueEntry } from "./run-queue.ts";
import { isTerminal, QueueFull, type RunRecord } from "./run-records.ts";

type IdempotencyDoc = IdempotencyRecord & { _id: string };

/**
 * A run's output schema is kept as its JSON text: a JSON schema's keys
 * (`$schema`, `$ref`, `$defs`) are field names MongoDB (and FerretDB) may
 * refuse or read as operators.
 */
const docOfRun = (r: RunRecord): RunRecord =>
  r.outputSchema === undefined ? r : ({ ...r, outputSchema: JSON.stringify(r.outputSchema) } as unknown as RunRecord);
const runOfDoc = (r: RunRecord | undefined): RunRecord | undefined => {
  if (!r) return r;
  const run = { ...r };
  if (typeof run.outputSchema === "string") run.outputSchema = JSON.parse(run.outputSchema) as JsonObject;
  if (typeof run.pending === "string") run.pending = JSON.parse(run.pending) as PendingApproval;
  return run;
};
/** A run's pending approval as JSON text (the model's inputs may hold any key, `$` and `.` too). */
const pendingField = (pending: PendingApproval | undefined) => ({ pending: pending && JSON.stringify(pending) });

/**
 * MongoDB adapter. State changes are single-document guarded updates
 * (findOneAndUpdate on status and worker), so replicas need no transactions;
 * the thread lock is a guarded field on the thread document (threads and their
 * messages: `createMongoThreads`). Leases live in
 * their own collection: renewals, the one periodic write, never touch the run
 * document, so they cannot collide with a state change (FerretDB does not
 * isolate concurrent updates of one document; MongoDB would not need this).
 *
 * The worker reads only small collections: `run_queue` holds the queued runs
 * and `run_leases` the executing ones (with their organization and thread).
 * FerretDB scans a collection for filtered reads whatever its indexes, so
 * reading the ever-growing `runs` collection on every pass would slow the
 * queue as history grows.
 */
export function createMongoRunsStore(db: Db, ping: () => Promise<boolean>, close: () => Promise<void>): RunsStore {
  const runs: Collection<Doc<RunRecord>> = db.collection("runs");
  const keys: Collection<IdempotencyDoc> = db.collection("idempotency_keys");
  const claims: Collection<{ _id: string; worker: string; at: Date }> = db.collection("run_claims");
  const takeovers: Collection<{ _id: string; createdAt: Date }> = db.collection("idempotency_takeovers");
  /** Stale claims taken over, one document per stale claim (`runId:its time`): rare, left by a claimer that failed. */
  /** Each organization's queue slots (`org:n`, n below RUN_MAX_QUEUED_PER_ORGANIZATION), one per queued run: `reserveQueueSlot`. */
  const slots: Collection<{ _id: string; organizationId: string; runId: string; at: Date }> =
    db.collection("run_queue_slots");
  /** Ended runs whose terminal event is still to be written: a small collection, as the leases (the sweep reads it). */
  const unloggedEnds: Collection<{ _id: string; at: Date }> = db.collection("run_unlogged_ends");
  const claimTakeovers: Collection<{ _id: string; at: Date }> = db.collection("run_claim_takeovers");
  const leases: Collection<{ _id: string; worker: string; until: Date; organizationId?: string; threadId?: string }> =
    db.collection("run_leases");
  /** The deadlines of runs with a pending approval: a small collection the sweep reads, as the leases. */
  const approvalDeadlines: Collection<{ _id: string; deadline: Date; threadId?: string }> =
    db.collection("run_approval_deadlines");
  /** Paused runs whose last move left business (events to write, a re-queue): marked before the move, as unlogged ends. */
  const unsettledMarks: Collection<{ _id: string; at: Date }> = db.collection("run_unsettled_approvals");

  type QueueDoc = Omit<QueueEntry, "runId"> & { _id: string };
  const queue: Collection<QueueDoc> = db.collection("run_queue");
  const run = (doc: Doc<RunRecord> | null) => runOfDoc(fromDoc<RunRecord>(doc));
  const threadsAndMessages = createMongoThreads(db, runs);
  /** The oldest marks older than `before` (at most `limit`) in a marks collection, with the runs they name by id. */
  async function markedRuns(marksOf: Collection<{ _id: string; at: Date }>, before: Date, limit: number) {
    const marks = await marksOf
      .find({ at: { $lt: before } })
      .sort({ at: 1 })
      .limit(limit)
      .toArray();
    const found = new Map<string, RunRecord>(
      marks.length === 0
        ? []
        : (await runs.find({ _id: { $in: marks.map((m) => m._id) } }).toArray()).map((d) => [d._id, run(d)!]),
    );
    return { marks, found };
  }
  /** Whether expired idempotency records are deleted here (no TTL index on this server), and when that last happened. */
  let pruneKeys = false;
  let prunedAt = 0;
  const executing: { $in: RunRecord["status"][] } = { $in: ["STARTING", "RUNNING"] };
  // Fields a transition sets to undefined are removed, not stored as null.
  const setAndUnset = (changes: Record<string, unknown>): UpdateFilter<Doc<RunRecord>> => {
    const $set = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined));
    const unset = Object.keys(changes).filter((k) => changes[k] === undefined);
    return (unset.length ? { $set, $unset: Object.fromEntries(unset.map((k) => [k, ""])) } : { $set }) as UpdateFilter<
      Doc<RunRecord>
    >;
  };

  /**
   * One of the organization's `maxQueued` queue slots for the run: a unique
   * insert of `org:n`, so two creates on any replicas never share a slot and
   * the organization never has more queued runs than slots. A slot is held
   * while its run is queued (freed with its queue entry). Slots left by a
   * create that died are freed once they are a minute old without a queue
   * entry, when the organization finds none free.
   */
  async function reserveQueueSlot(r: RunRecord, maxQueued: number): Promise<boolean> {
    for (let round = 0; round < 2; round++) {
      const held = await slots
        .find({ organizationId: r.organizationId }, { projection: { runId: 1, at: 1 } })
        .toArray();
      if (held.some((slot) => slot.runId === r.id)) return true; // this run's already (a create taken over)
      const taken = new Set(held.map((slot) => slot._id));
      const free = Array.from({ length: maxQueued }, (_, n) => `${r.organizationId}:${n}`).filter(
        (id) => !taken.has(id),
      );
      // From a random free slot on: creates at once mostly try different ones.
      const from = Math.floor(Math.random() * free.length);
      for (const id of [...free.slice(from), ...free.slice(0, from)]) {
        if (
          await ignoringDuplicate(
            slots.insertOne({ _id: id, organizationId: r.organizationId, runId: r.id, at: r.createdAt }),
          )
        )
          return true;
      }
      const old = held.filter((slot) => slot.at.getTime() < r.createdAt.getTime() - orphanSlotMs);
      if (old.length === 0) return false;
      const queued = new Set(
        (await queue.find({ _id: { $in: old.map((slot) => slot.runId) } }, { projection: { _id: 1 } }).toArray()).map(
          (e) => e._id,
        ),
      );
      const orphans = old.filter((slot) => !queued.has(slot.runId));
      if (orphans.length === 0) return false;
      await slots.deleteMany({
        _id: { $in: orphans.map((slot) => slot._id) },
        runId: { $in: orphans.map((slot) => slot.runId) },
      });
    }
    return false;
  }
  /** A run left the queue: its slot is free. */
  const freeQueueSlot = async (runId: string) => void (await slots.deleteOne({ runId }));

  return {
    sharedByProcesses: true,
    durable: async () => {},
    async init() {
      await runs.createIndex({ organizationId: 1, assistantId: 1, createdAt: -1, _id: -1 });
      await runs.createIndex({ status: 1, createdAt: 1 });
      await runs.createIndex({ threadId: 1, status: 1, createdAt: 1 });
      await approvalDeadlines.createIndex({ deadline: 1 });
      await db.collection("threads").createIndex({ organizationId: 1, createdAt: -1, _id: -1 });
      await db.collection("thread_messages").createIndex({ threadId: 1, generation: 1, index: 1, _id: 1 });
      await db.collection("thread_message_slots").createIndex({ threadId: 1, generation: 1, index: -1 });
      await leases.createIndex({ until: 1 });
      await unloggedEnds.createIndex({ at: 1 });
      await unsettledMarks.createIndex({ at: 1 });
      await slots.createIndex({ organizationId: 1 });
      await slots.createIndex({ runId: 1 });
      await queue.createIndex({ createdAt: 1, _id: 1 });
      await queue.createIndex({ organizationId: 1 });
      // Records expire after the window: a TTL index (MongoDB's TTL monitor runs every 60 s; reads
      // check the age too). FerretDB 1.24 refuses the option (NotImplemented): there a plain index,
      // and putIdempotency prunes at most once a minute.
      for (const collection of [keys, takeovers] as unknown as Collection<{ createdAt: Date }>[]) {
        try {
          await collection.createIndex({ createdAt: 1 }, { expireAfterSeconds: idempotencyWindowMs / 1000 });
        } catch (error) {
          if ((error as { code?: unknown }).code !== notImplemented) throw error;
          await collection.createIndex({ createdAt: 1 });
          pruneKeys = true;
        }
      }
    },
    ready: ping,
    close,

    async insertRun(r, maxQueued) {
      if (r.status === "QUEUED" && maxQueued !== undefined && !(await reserveQueueSlot(r, maxQueued))) {
        if (await runs.findOne({ _id: r.id }, { projection: { _id: 1 } })) return false; // stored already (a keyed create taken over)
        throw new QueueFull(maxQueued);
      }
      // The queue entry first: a run is never QUEUED without one. An entry
      // whose run never follows (the creator died) is dropped by the worker.
      if (r.status === "QUEUED")
        await ignoringDuplicate(
          queue.insertOne({
            _id: r.id,
            organizationId: r.organizationId,
            createdAt: r.createdAt,
            ...(r.threadId ? { threadId: r.threadId } : {}),
          }),
        );
      return ignoringDuplicate(runs.insertOne(toDoc(docOfRun(r))));
    },
    async getRun(organizationId, id) {
      // By _id alone, the organization checked here: FerretDB pushes down only an `_id`-only filter.
      const found = run(await runs.findOne({ _id: id }));
      return found?.organizationId === organizationId ? found : undefined;
    },
    getRunById: async (id) => run(await runs.findOne({ _id: id })),
    async listRuns(organizationId, assistantId, statuses, skip, limit) {
      const query: Filter<Doc<RunRecord>> = {
        organizationId,
        assistantId,
        ...(statuses.length ? { status: { $in: statuses } } : {}),
      };
      const [docs, totalCount] = await Promise.all([
        runs.find(query).sort(newestFirstSort).skip(skip).limit(limit).toArray(),
        runs.countDocuments(query),
      ]);
      return { items: docs.map((d) => run(d)!), totalCount };
    },
    async transition(id, guard, to, changes, at) {
      if (guard.leaseExpiredBefore && !(await leases.findOne({ _id: id, until: { $lt: guard.leaseExpiredBefore } })))
        return undefined;
      const filter: Filter<Doc<RunRecord>> = { _id: id, status: { $in: [...guard.from] } };
      if (guard.worker !== undefined) filter.worker = guard.worker;
      if (guard.unheld) filter.worker = { $exists: false };
      if (guard.pending) (filter as Record<string, unknown>).pending = JSON.stringify(guard.pending);
      const { leaseUntil, pending, ...rest } = changes;
      // The end is marked before it is written: a crash in between leaves a mark the sweep drops, never an end without one.
      const marked =
        isTerminal(to) &&
        (await unloggedEnds.updateOne({ _id: id }, { $setOnInsert: { at } }, { upsert: true })).upsertedCount === 1;
      // Marked before the move too: a crash after it leaves the mark, and one before leaves a mark the sweep drops.
      const pausing =
        to === "RUNNING" &&
        pending !== undefined &&
        unsettled(pending) &&
        (guard.unheld === true || ("worker" in changes && changes.worker === undefined));
      if (pausing) await unsettledMarks.updateOne({ _id: id }, { $set: { at } }, { upsert: true });
      const changed = run(
        await runs.findOneAndUpdate(
          filter,
          setAndUnset({ ...rest, ...("pending" in changes ? pendingField(pending) : {}), status: to, updatedAt: at }),
          {
            returnDocument: "after",
          },
        ),
      );
      if (!changed && marked) await unloggedEnds.deleteOne({ _id: id });
      if (changed && "pending" in changes)
        await (pending
          ? approvalDeadlines.updateOne(
              { _id: id },
              {
                $set: {
                  deadline: new Date(pending.deadline),
                  ...(changed.threadId ? { threadId: changed.threadId } : {}),
                },
              },
              { upsert: true },
            )
          : approvalDeadlines.deleteOne({ _id: id }));
      // Settled, taken up or ended: its mark goes, unless a later move made it anew.
      if (changed && !pausedUnsettled(changed) && ("pending" in changes || guard.unheld))
        await unsettledMarks.deleteOne({ _id: id, at: { $lte: at } });
      // Taken back up, a paused run holds its thread by its lease: its deadline is done with.
      if (changed && guard.unheld && changes.worker) await approvalDeadlines.deleteOne({ _id: id });
      // A paused run taken back up (`unheld`) leaves the queue it was put back in, as a queued run does.
      if (changed && to !== "QUEUED" && (guard.from.includes("QUEUED") || guard.unheld))
        await Promise.all([queue.deleteOne({ _id: id }), freeQueueSlot(id)]);
      if (!changed || !("leaseUntil" in changes)) return changed;
      if (leaseUntil === undefined) {
        await leases.deleteOne({ _id: id });
        return changed;
      }
      const holds = {
        worker: changed.worker ?? "",
        until: leaseUntil,
        organizationId: changed.organizationId,
        ...(changed.threadId ? { threadId: changed.threadId } : {}),
      };
      await leases.updateOne({ _id: id }, { $set: holds }, { upsert: true });
      return { ...changed, leaseUntil };
    },
    async claimRun(id, worker, at, staleBefore) {
      if (await ignoringDuplicate(claims.insertOne({ _id: id, worker, at }))) return true;
      if (!staleBefore) return false;
      const standing = await claims.findOne({ _id: id });
      if (!standing || standing.at >= staleBefore) return false; // fresh, or given back meanwhile (the next pass claims it)
      // One taker per stale claim: a unique insert naming it (FerretDB does not isolate guarded updates of one document).
      if (!(await ignoringDuplicate(claimTakeovers.insertOne({ _id: `${id}:${standing.at.getTime()}`, at }))))
        return false;
      await claims.replaceOne({ _id: id }, { worker, at }, { upsert: true });
      return true;
    },
    async renewLease(id, worker, leaseUntil) {
      // Reads the run, writes only the lease: still ours while STARTING or RUNNING and held by this worker.
      const held = await runs.findOne({ _id: id }, { projection: { worker: 1, status: 1 } }); // `_id` alone, as getRun
      if (!held || held.worker !== worker || !executing.$in.includes(held.status)) return false;
      return (await leases.updateOne({ _id: id, worker }, { $set: { until: leaseUntil } })).matchedCount === 1;
    },
    async queueCandidates(skipOrganizations, skipThreads, limit) {
      const filter: Filter<QueueDoc> = {};
      if (skipOrganizations.length) filter.organizationId = { $nin: skipOrganizations };
      if (skipThreads.length) filter.threadId = { $nin: skipThreads };
      return (await queue.find(filter).sort({ createdAt: 1, _id: 1 }).limit(limit).toArray()).map(
        ({ _id, ...entry }) => ({ runId: _id, ...entry }),
      );
    },
    async dropQueueEntry(runId) {
      await Promise.all([queue.deleteOne({ _id: runId }), freeQueueSlot(runId)]);
    },
    async releaseClaim(runId) {
      await claims.deleteOne({ _id: runId });
    },
    async requeuePaused(r, at) {
      await claims.deleteOne({ _id: r.id });
      // Without its thread: the run holds it already, and the thread's other runs must not hide this entry.
      await ignoringDuplicate(queue.insertOne({ _id: r.id, organizationId: r.organizationId, createdAt: at }));
      if (!r.pending?.unlogged?.length) await unsettledMarks.deleteOne({ _id: r.id, at: { $lte: at } });
    },
    countQueued: (organizationId) => queue.countDocuments({ organizationId }),
    async executingLoad() {
      // One read of a collection that holds only executing runs; counted here rather than with
      // $group so it runs the same on FerretDB.
      const perOrganization = new Map<string, number>();
      const threadsHeld = new Set<string>();
      const [held, paused] = await Promise.all([
        leases.find({}, { projection: { organizationId: 1, threadId: 1 } }).toArray(),
        // A paused run holds its thread without a lease: the thread's queued runs wait, and take no candidate's place.
        approvalDeadlines.find({ threadId: { $exists: true } }, { projection: { threadId: 1 } }).toArray(),
      ]);
      for (const { threadId } of paused) if (threadId) threadsHeld.add(threadId);
      for (const lease of held) {
        if (lease.organizationId)
          perOrganization.set(lease.organizationId, (perOrganization.get(lease.organizationId) ?? 0) + 1);
        if (lease.threadId) threadsHeld.add(lease.threadId);
      }
      return { perOrganization, threads: threadsHeld };
    },
    async expiredLeases(now, limit) {
      const expired = await leases
        .find({ until: { $lt: now } })
        .limit(limit)
        .toArray();
      const until = new Map(expired.map((l) => [l._id, l.until]));
      const held = (await runs.find({ _id: { $in: [...until.keys()] }, status: executing }).toArray()).map(
        (d) => run(d)!,
      );
      // A paused run holds no lease: one left by a crash between a pause's write and the lease's removal is stale,
      // not a lost worker. It is removed, and the pause's deadline written again (the same crash may have lost it).
      const paused = held.filter((r) => !r.worker && r.pending);
      for (const r of paused) {
        await approvalDeadlines.updateOne(
          { _id: r.id },
          { $set: { deadline: new Date(r.pending!.deadline), ...(r.threadId ? { threadId: r.threadId } : {}) } },
          { upsert: true },
        );
        await leases.deleteOne({ _id: r.id });
      }
      return held.filter((r) => !paused.includes(r)).map((r) => ({ ...r, leaseUntil: until.get(r.id) }));
    },
    async endLogged(id) {
      await unloggedEnds.deleteOne({ _id: id });
    },
    async expiredApprovals(now, limit) {
      const due = await approvalDeadlines
        .find({ deadline: { $lt: now } })
        .limit(limit)
        .toArray();
      if (due.length === 0) return [];
      const found = (await runs.find({ _id: { $in: due.map((d) => d._id) } }).toArray()).map((d) => run(d)!);
      // A run that ended otherwise (reaped after it was taken up again) needs its deadline no more.
      const ended = found.filter((r) => isTerminal(r.status)).map((r) => r.id);
      if (ended.length > 0) await approvalDeadlines.deleteMany({ _id: { $in: ended } });
      // A run taken up again keeps its pending approval (and deadline) until it ends or pauses anew: not awaiting.
      return found.filter((r) => r.status === "RUNNING" && r.pending && !r.worker);
    },
    async unsettledApprovals(before, limit) {
      const { marks, found } = await markedRuns(unsettledMarks, before, limit);
      const due: RunRecord[] = [];
      for (const mark of marks) {
        const marked = found.get(mark._id);
        if (marked && pausedUnsettled(marked)) due.push(marked);
        // Its move failed after the mark, or a later one settled it: dropped, unless marked anew meanwhile.
        else await unsettledMarks.deleteOne({ _id: mark._id, at: mark.at });
      }
      return due;
    },
    async unloggedEnds(before, limit) {
      const { marks, found } = await markedRuns(unloggedEnds, before, limit);
      // A mark whose run has not ended is skipped, not dropped: its move is on its way, or a crash came between the
      // two and the run ends later (every run does: the reaper), keeping the mark then.
      return marks.flatMap((m) => {
        const ended = found.get(m._id);
        return ended && isTerminal(ended.status) ? [ended] : [];
      });
    },
    ...threadsAndMessages,

    async putIdempotency(record) {
      if (pruneKeys && record.createdAt.getTime() - prunedAt > 60_000) {
        prunedAt = record.createdAt.getTime();
        const before = new Date(prunedAt - idempotencyWindowMs);
        void Promise.all([
          keys.deleteMany({ createdAt: { $lt: before } }),
          takeovers.deleteMany({ createdAt: { $lt: before } }),
        ]).catch(() => {});
      }
      return ignoringDuplicate(keys.insertOne({ _id: `${record.organizationId}:${record.key}`, ...record }));
    },
    async getIdempotency(organizationId, key, createdAfter) {
      const doc = await keys.findOne({ _id: `${organizationId}:${key}` });
      if (!doc || doc.createdAt < createdAfter) return undefined;
      const { _id, ...record } = doc;
      // Records written before takeovers existed have no attempt: the first one, begun when created.
      return { ...record, attempt: record.attempt ?? 0, attemptAt: record.attemptAt ?? record.createdAt };
    },
    async deleteIdempotency(organizationId, key, runId) {
      await keys.deleteOne({ _id: `${organizationId}:${key}`, runId });
    },
    async takeOverIdempotency(organizationId, key, attempt, at) {
      // A unique insert per attempt, not a guarded update: FerretDB could let two guarded updates of one record both match.
      if (
        !(await ignoringDuplicate(takeovers.insertOne({ _id: `${organizationId}:${key}:${attempt}`, createdAt: at })))
      )
        return false;
      await keys.updateOne({ _id: `${organizationId}:${key}` }, { $set: { attempt, attemptAt: at } });
      return true;
    },
  };
}

/** A queue slot this old whose run has no queue entry was left by a create that died between the two. */
const orphanSlotMs = 60_000;

/** The server's answer to an index option it lacks (FerretDB 1.24 and `expireAfterSeconds`). */
const notImplemented = 238;

/** True when the insert happened, false when the unique key was taken. */
async function ignoringDuplicate(insert: Promise<unknown>): Promise<boolean> {
  try {
    await insert;
    return true;
  } catch (error) {
    if (isDuplicateKey(error)) return false;
    throw error;
  }
}
