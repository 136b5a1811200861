import type { Collection, Db, Filter, UpdateFilter } from "mongodb";
import { fromDoc, isDuplicateKey, newestFirstSort, toDoc, type Doc } from "@loom/kit/mongo";
import type { IdempotencyRecord, RunRecord, RunsStore, ThreadRecord } from "./port.ts";

type IdempotencyDoc = IdempotencyRecord & { _id: string };

/**
 * MongoDB adapter. State changes are single-document guarded updates
 * (findOneAndUpdate on status and worker), so replicas need no transactions;
 * the thread lock is a guarded field on the thread document. Leases live in
 * their own collection: renewals, the one periodic write, never touch the run
 * document, so they cannot collide with a state change (FerretDB does not
 * isolate concurrent updates of one document; MongoDB would not need this).
 */
export function createMongoRunsStore(db: Db, ping: () => Promise<boolean>, close: () => Promise<void>): RunsStore {
  const runs: Collection<Doc<RunRecord>> = db.collection("runs");
  const threads: Collection<Doc<ThreadRecord>> = db.collection("threads");
  const keys: Collection<IdempotencyDoc> = db.collection("idempotency_keys");
  const claims: Collection<{ _id: string; worker: string; at: Date }> = db.collection("run_claims");
  const leases: Collection<{ _id: string; worker: string; until: Date }> = db.collection("run_leases");
  const run = (doc: Doc<RunRecord> | null) => fromDoc<RunRecord>(doc);
  const executing: { $in: RunRecord["status"][] } = { $in: ["STARTING", "RUNNING"] };
  // Fields a transition sets to undefined are removed, not stored as null.
  const setAndUnset = (changes: Record<string, unknown>): UpdateFilter<Doc<RunRecord>> => {
    const $set = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined));
    const unset = Object.keys(changes).filter((k) => changes[k] === undefined);
    return (unset.length ? { $set, $unset: Object.fromEntries(unset.map((k) => [k, ""])) } : { $set }) as UpdateFilter<Doc<RunRecord>>;
  };

  return {
    async init() {
      await runs.createIndex({ organizationId: 1, assistantId: 1, createdAt: -1, _id: -1 });
      await runs.createIndex({ status: 1, createdAt: 1 });
      await runs.createIndex({ threadId: 1, status: 1, createdAt: 1 });
      await threads.createIndex({ organizationId: 1, createdAt: -1, _id: -1 });
      await leases.createIndex({ until: 1 });
    },
    ready: ping,
    close,

    async insertRun(r) {
      await runs.insertOne(toDoc(r));
    },
    getRun: async (organizationId, id) => run(await runs.findOne({ _id: id, organizationId })),
    getRunById: async (id) => run(await runs.findOne({ _id: id })),
    async listRuns(organizationId, assistantId, statuses, skip, limit) {
      const query: Filter<Doc<RunRecord>> = { organizationId, assistantId, ...(statuses.length ? { status: { $in: statuses } } : {}) };
      const [docs, totalCount] = await Promise.all([
        runs.find(query).sort(newestFirstSort).skip(skip).limit(limit).toArray(),
        runs.countDocuments(query),
      ]);
      return { items: docs.map((d) => run(d)!), totalCount };
    },
    async transition(id, guard, to, changes, at) {
      if (guard.leaseExpiredBefore && !(await leases.findOne({ _id: id, until: { $lt: guard.leaseExpiredBefore } }))) return undefined;
      const filter: Filter<Doc<RunRecord>> = { _id: id, status: { $in: [...guard.from] } };
      if (guard.worker !== undefined) filter.worker = guard.worker;
      const { leaseUntil, ...rest } = changes;
      const changed = run(await runs.findOneAndUpdate(filter, setAndUnset({ ...rest, status: to, updatedAt: at }), { returnDocument: "after" }));
      if (!changed || !("leaseUntil" in changes)) return changed;
      if (leaseUntil === undefined) {
        await leases.deleteOne({ _id: id });
        return changed;
      }
      await leases.updateOne({ _id: id }, { $set: { worker: changed.worker ?? "", until: leaseUntil } }, { upsert: true });
      return { ...changed, leaseUntil };
    },
    async claimRun(id, worker, at) {
      try {
        await claims.insertOne({ _id: id, worker, at });
        return true;
      } catch (error) {
        if (isDuplicateKey(error)) return false;
        throw error;
      }
    },
    async renewLease(id, worker, leaseUntil) {
      // Reads the run, writes only the lease: still ours while STARTING or RUNNING and held by this worker.
      if (!(await runs.findOne({ _id: id, worker, status: executing }))) return false;
      return (await leases.updateOne({ _id: id, worker }, { $set: { until: leaseUntil } })).matchedCount === 1;
    },
    queuedRuns: async (limit) => (await runs.find({ status: "QUEUED" }).sort({ createdAt: 1, _id: 1 }).limit(limit).toArray()).map((d) => run(d)!),
    countExecuting: (organizationId) => runs.countDocuments({ organizationId, status: executing }),
    async expiredLeases(now, limit) {
      const expired = await leases.find({ until: { $lt: now } }).limit(limit).toArray();
      const until = new Map(expired.map((l) => [l._id, l.until]));
      const held = await runs.find({ _id: { $in: [...until.keys()] }, status: executing }).toArray();
      return held.map((d) => ({ ...run(d)!, leaseUntil: until.get(d._id) }));
    },
    threadHistory: async (threadId, before) =>
      (await runs.find({ threadId, status: "SUCCEEDED", createdAt: { $lt: before } }).sort({ createdAt: 1, _id: 1 }).toArray()).map((d) => run(d)!),

    async insertThread(thread) {
      await threads.insertOne(toDoc(thread));
    },
    getThread: async (organizationId, id) => fromDoc<ThreadRecord>(await threads.findOne({ _id: id, organizationId })),
    async listThreads(organizationId, alias, skip, limit) {
      const query = { organizationId, ...(alias !== undefined ? { alias } : {}) };
      const [docs, totalCount] = await Promise.all([
        threads.find(query).sort(newestFirstSort).skip(skip).limit(limit).toArray(),
        threads.countDocuments(query),
      ]);
      return { items: docs.map((d) => fromDoc<ThreadRecord>(d)!), totalCount };
    },
    deleteThread: async (organizationId, id) => (await threads.deleteOne({ _id: id, organizationId })).deletedCount === 1,
    async lockThread(threadId, runId, staleHolders) {
      const taken = await threads.findOneAndUpdate(
        { _id: threadId, $or: [{ activeRunId: { $exists: false } }, { activeRunId: { $in: [runId, ...staleHolders] } }] },
        { $set: { activeRunId: runId } },
        { returnDocument: "after" },
      );
      if (taken) return { locked: true };
      const thread = await threads.findOne({ _id: threadId });
      return thread ? { locked: false, holder: thread.activeRunId } : { locked: true };
    },
    async unlockThread(threadId, runId) {
      await threads.updateOne({ _id: threadId, activeRunId: runId }, { $unset: { activeRunId: "" } });
    },

    async putIdempotency(record) {
      try {
        await keys.insertOne({ _id: `${record.organizationId}:${record.key}`, ...record });
        return true;
      } catch (error) {
        if (isDuplicateKey(error)) return false;
        throw error;
      }
    },
    async getIdempotency(organizationId, key) {
      const doc = await keys.findOne({ _id: `${organizationId}:${key}` });
      if (!doc) return undefined;
      const { _id, ...record } = doc;
      return record;
    },
    async deleteIdempotency(organizationId, key) {
      await keys.deleteOne({ _id: `${organizationId}:${key}` });
    },
  };
}
