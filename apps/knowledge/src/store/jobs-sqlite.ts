import { dateOf, newestFirstOrder, optional, type Row, type SqliteHandle } from "@loom/store/sqlite";
import type { JobStatus, KnowledgeBaseJobRecord, KnowledgeBaseJobStore } from "./jobs.ts";

/** The jobs and locks tables: a schema version of the knowledge tables (sqlite.ts). */
export const jobsMigration = `CREATE TABLE knowledge_base_jobs (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL,
     knowledge_base_id TEXT NOT NULL, status TEXT NOT NULL, status_detail TEXT NOT NULL, bytes_ingested INTEGER NOT NULL,
     errors TEXT NOT NULL, cancel_requested INTEGER NOT NULL, attempts INTEGER NOT NULL, created_by TEXT NOT NULL,
     created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, completed_at INTEGER);
   CREATE INDEX knowledge_base_jobs_by_knowledge_base
     ON knowledge_base_jobs (organization_id, knowledge_base_id, created_at DESC, id DESC);
   CREATE INDEX knowledge_base_jobs_unfinished ON knowledge_base_jobs (created_at)
     WHERE status IN ('QUEUED', 'RUNNING');
   CREATE TABLE knowledge_base_job_locks (knowledge_base_id TEXT PRIMARY KEY, job_id TEXT NOT NULL, worker TEXT NOT NULL,
     lease_until INTEGER NOT NULL);`;

const jobOf = (row: Row | undefined): KnowledgeBaseJobRecord | undefined =>
  row && {
    id: row.id as string,
    organizationId: row.organization_id as string,
    knowledgeBaseId: row.knowledge_base_id as string,
    status: row.status as JobStatus,
    statusDetail: row.status_detail as string,
    bytesIngested: Number(row.bytes_ingested),
    errors: JSON.parse(row.errors as string),
    cancelRequested: Number(row.cancel_requested) === 1,
    attempts: Number(row.attempts),
    createdBy: row.created_by as string,
    createdAt: dateOf(row.created_at)!,
    updatedAt: dateOf(row.updated_at)!,
    ...(optional(row.completed_at) !== undefined && { completedAt: dateOf(row.completed_at)! }),
  };

/** SQLite adapter of the jobs part: one row per job (its errors as JSON text), one row per held lock. */
export function createSqliteJobStore(handle: SqliteHandle): KnowledgeBaseJobStore {
  const { prepare } = handle;
  return {
    async insertJob(j) {
      prepare(
        `INSERT INTO knowledge_base_jobs (id, organization_id, knowledge_base_id, status, status_detail, bytes_ingested,
           errors, cancel_requested, attempts, created_by, created_at, updated_at, completed_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        j.id,
        j.organizationId,
        j.knowledgeBaseId,
        j.status,
        j.statusDetail,
        j.bytesIngested,
        JSON.stringify(j.errors),
        j.cancelRequested ? 1 : 0,
        j.attempts,
        j.createdBy,
        j.createdAt.getTime(),
        j.updatedAt.getTime(),
        j.completedAt?.getTime() ?? null,
      );
    },
    getJob: async (organizationId, id) =>
      jobOf(prepare("SELECT * FROM knowledge_base_jobs WHERE id = ? AND organization_id = ?").get(id, organizationId)),
    async listJobs(organizationId, knowledgeBaseId, statuses, skip, limit) {
      const where = `organization_id = ? AND knowledge_base_id = ?
        AND (? = 0 OR status IN (SELECT value FROM json_each(?)))`;
      const args = [organizationId, knowledgeBaseId, statuses.length, JSON.stringify(statuses)];
      const totalCount = Number(
        prepare(`SELECT count(*) AS n FROM knowledge_base_jobs WHERE ${where}`).get(...args)!.n,
      );
      const rows = prepare(
        `SELECT * FROM knowledge_base_jobs WHERE ${where} ORDER BY ${newestFirstOrder} LIMIT ? OFFSET ?`,
      ).all(...args, limit, skip);
      return { items: rows.map((row) => jobOf(row)!), totalCount };
    },
    async cancelJob(organizationId, id, at) {
      prepare(
        `UPDATE knowledge_base_jobs SET
           status = CASE status WHEN 'QUEUED' THEN 'CANCELLED' ELSE status END,
           status_detail = CASE status WHEN 'QUEUED' THEN 'cancelled before it started' ELSE status_detail END,
           completed_at = CASE status WHEN 'QUEUED' THEN ? ELSE completed_at END,
           cancel_requested = CASE status WHEN 'RUNNING' THEN 1 ELSE cancel_requested END,
           updated_at = ?
         WHERE id = ? AND organization_id = ? AND status IN ('QUEUED', 'RUNNING')`,
      ).run(at.getTime(), at.getTime(), id, organizationId);
      return jobOf(
        prepare("SELECT * FROM knowledge_base_jobs WHERE id = ? AND organization_id = ?").get(id, organizationId),
      );
    },
    async deleteJobsOf(organizationId, knowledgeBaseId) {
      prepare("DELETE FROM knowledge_base_jobs WHERE organization_id = ? AND knowledge_base_id = ?").run(
        organizationId,
        knowledgeBaseId,
      );
      prepare("DELETE FROM knowledge_base_job_locks WHERE knowledge_base_id = ?").run(knowledgeBaseId);
    },
    unfinishedJobs: async (limit) =>
      prepare("SELECT * FROM knowledge_base_jobs WHERE status IN ('QUEUED', 'RUNNING') ORDER BY created_at, id LIMIT ?")
        .all(limit)
        .map((row) => jobOf(row)!),
    lockKnowledgeBase: async (knowledgeBaseId, jobId, worker, leaseUntil, now) =>
      prepare(
        `INSERT INTO knowledge_base_job_locks (knowledge_base_id, job_id, worker, lease_until) VALUES (?, ?, ?, ?)
         ON CONFLICT (knowledge_base_id) DO UPDATE SET job_id = excluded.job_id, worker = excluded.worker,
           lease_until = excluded.lease_until
         WHERE lease_until < ?`,
      ).run(knowledgeBaseId, jobId, worker, leaseUntil.getTime(), now.getTime()).changes === 1,
    renewLock: async (knowledgeBaseId, worker, leaseUntil) =>
      prepare("UPDATE knowledge_base_job_locks SET lease_until = ? WHERE knowledge_base_id = ? AND worker = ?").run(
        leaseUntil.getTime(),
        knowledgeBaseId,
        worker,
      ).changes === 1,
    async releaseLock(knowledgeBaseId, worker) {
      prepare("DELETE FROM knowledge_base_job_locks WHERE knowledge_base_id = ? AND worker = ?").run(
        knowledgeBaseId,
        worker,
      );
    },
    updateUnfinishedJob: async (id, progress, at) =>
      prepare(
        `UPDATE knowledge_base_jobs SET status = coalesce(?, status), status_detail = coalesce(?, status_detail),
           bytes_ingested = coalesce(?, bytes_ingested), errors = coalesce(?, errors), attempts = coalesce(?, attempts),
           completed_at = coalesce(?, completed_at), updated_at = ?
         WHERE id = ? AND status IN ('QUEUED', 'RUNNING')`,
      ).run(
        progress.status ?? null,
        progress.statusDetail ?? null,
        progress.bytesIngested ?? null,
        progress.errors ? JSON.stringify(progress.errors) : null,
        progress.attempts ?? null,
        progress.completedAt?.getTime() ?? null,
        at.getTime(),
        id,
      ).changes === 1,
  };
}
