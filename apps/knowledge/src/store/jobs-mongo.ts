import { type Doc, fromDoc, isDuplicateKey, newestFirstSort, toDoc } from "@loom/store/mongo";
import type { Collection, Db } from "mongodb";
import type { JobStatus, KnowledgeBaseJobRecord, KnowledgeBaseJobStore } from "./jobs.ts";

interface LockDoc {
  _id: string;
  jobId: string;
  worker: string;
  leaseUntil: Date;
}

const unfinished = { $in: ["QUEUED", "RUNNING"] as JobStatus[] };

/**
 * MongoDB adapter of the jobs part: a collection of jobs scoped by organizationId, and one of locks keyed by
 * knowledge base id. A lock is taken by an insert on that key (which holds on servers that do not isolate concurrent
 * updates of one document: FerretDB), and an expired one is first deleted by a delete guarded by its lease.
 */
export function createMongoJobStore(db: Db): KnowledgeBaseJobStore & { init(): Promise<void> } {
  const jobs: Collection<Doc<KnowledgeBaseJobRecord>> = db.collection("knowledge_base_jobs");
  const locks: Collection<LockDoc> = db.collection("knowledge_base_job_locks");
  const byId = (organizationId: string, id: string) => ({ _id: id, organizationId });
  return {
    async init() {
      await jobs.createIndex({ organizationId: 1, knowledgeBaseId: 1, createdAt: -1, _id: -1 });
      await jobs.createIndex({ status: 1, createdAt: 1 });
    },
    async insertJob(job) {
      await jobs.insertOne(toDoc(job));
    },
    getJob: async (organizationId, id) => fromDoc<KnowledgeBaseJobRecord>(await jobs.findOne(byId(organizationId, id))),
    async listJobs(organizationId, knowledgeBaseId, statuses, skip, limit) {
      const filter = {
        organizationId,
        knowledgeBaseId,
        ...(statuses.length > 0 && { status: { $in: [...statuses] } }),
      };
      const [docs, totalCount] = await Promise.all([
        jobs.find(filter).sort(newestFirstSort).skip(skip).limit(limit).toArray(),
        jobs.countDocuments(filter),
      ]);
      return { items: docs.map((d) => fromDoc<KnowledgeBaseJobRecord>(d)!), totalCount };
    },
    async cancelJob(organizationId, id, at) {
      await jobs.updateOne(
        { ...byId(organizationId, id), status: "QUEUED" },
        { $set: { status: "CANCELLED", statusDetail: "cancelled before it started", completedAt: at, updatedAt: at } },
      );
      await jobs.updateOne(
        { ...byId(organizationId, id), status: "RUNNING" },
        { $set: { cancelRequested: true, updatedAt: at } },
      );
      return fromDoc<KnowledgeBaseJobRecord>(await jobs.findOne(byId(organizationId, id)));
    },
    async deleteJobsOf(organizationId, knowledgeBaseId) {
      await jobs.deleteMany({ organizationId, knowledgeBaseId });
      await locks.deleteOne({ _id: knowledgeBaseId });
    },
    unfinishedJobs: async (limit) =>
      (await jobs.find({ status: unfinished }).sort({ createdAt: 1, _id: 1 }).limit(limit).toArray()).map(
        (d) => fromDoc<KnowledgeBaseJobRecord>(d)!,
      ),
    async lockKnowledgeBase(knowledgeBaseId, jobId, worker, leaseUntil, now) {
      await locks.deleteOne({ _id: knowledgeBaseId, leaseUntil: { $lt: now } });
      try {
        await locks.insertOne({ _id: knowledgeBaseId, jobId, worker, leaseUntil });
        return true;
      } catch (error) {
        if (isDuplicateKey(error)) return false;
        throw error;
      }
    },
    renewLock: async (knowledgeBaseId, worker, leaseUntil) =>
      (await locks.updateOne({ _id: knowledgeBaseId, worker }, { $set: { leaseUntil } })).matchedCount === 1,
    async releaseLock(knowledgeBaseId, worker) {
      await locks.deleteOne({ _id: knowledgeBaseId, worker });
    },
    updateUnfinishedJob: async (id, progress, at) =>
      (
        await jobs.updateOne(
          { _id: id, status: unfinished },
          {
            $set: { ...Object.fromEntries(Object.entries(progress).filter(([, v]) => v !== undefined)), updatedAt: at },
          },
        )
      ).matchedCount === 1,
  };
}
