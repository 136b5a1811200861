import type { Page } from "@loom/contracts/paging";

export const jobStatuses = ["QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"] as const;
export type JobStatus = (typeof jobStatuses)[number];

/** A file the job could not ingest (Griptape Cloud's `Error`): the job went on with the next. */
export interface JobFileError {
  /** `<bucket_id>/<asset name>`. */
  path: string;
  /** unsupported_type, too_large, unreadable, no_text, limit_exceeded, not_found. */
  type: string;
  message: string;
}

export interface KnowledgeBaseJobRecord {
  id: string;
  organizationId: string;
  knowledgeBaseId: string;
  status: JobStatus;
  /** Why it FAILED or was CANCELLED; "" otherwise. */
  statusDetail: string;
  bytesIngested: number;
  errors: JobFileError[];
  /** A cancel asked while it ran: the worker ends it at its next check. */
  cancelRequested: boolean;
  /** How many times a worker took it up: more than one means a worker was lost while it ran. */
  attempts: number;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
  completedAt?: Date;
}

/** What a worker writes on a job it holds. */
export type JobProgress = Partial<
  Pick<KnowledgeBaseJobRecord, "status" | "statusDetail" | "bytesIngested" | "errors" | "attempts" | "completedAt">
>;

/**
 * The ingest jobs part of the knowledge store, and the per-knowledge-base lock by which one worker (of any replica)
 * runs one job of a knowledge base at a time. The lock is a lease: renewed while the job runs, taken over by another
 * worker once it has run out (docs/decisions.md, "Ingest jobs").
 */
export interface KnowledgeBaseJobStore {
  insertJob(job: KnowledgeBaseJobRecord): Promise<void>;
  getJob(organizationId: string, id: string): Promise<KnowledgeBaseJobRecord | undefined>;
  /** A knowledge base's jobs, newest first by created_at, ties by id; only those in `statuses` when not empty. */
  listJobs(
    organizationId: string,
    knowledgeBaseId: string,
    statuses: readonly JobStatus[],
    skip: number,
    limit: number,
  ): Promise<Page<KnowledgeBaseJobRecord>>;
  /**
   * A QUEUED job becomes CANCELLED (completed at `at`); a RUNNING one is marked `cancelRequested`; a finished one is
   * left. The job as it is after; undefined when unknown.
   */
  cancelJob(organizationId: string, id: string, at: Date): Promise<KnowledgeBaseJobRecord | undefined>;
  /** Deletes the knowledge base's jobs and its lock. */
  deleteJobsOf(organizationId: string, knowledgeBaseId: string): Promise<void>;
  /** Unfinished jobs (QUEUED or RUNNING) of every organization, oldest first. */
  unfinishedJobs(limit: number): Promise<KnowledgeBaseJobRecord[]>;
  /**
   * Takes the knowledge base's lock for `worker`, to run `jobId`: when no one holds it, or its lease ran out before
   * `now`. Whether it was taken.
   */
  lockKnowledgeBase(
    knowledgeBaseId: string,
    jobId: string,
    worker: string,
    leaseUntil: Date,
    now: Date,
  ): Promise<boolean>;
  /** Extends the lock, only while `worker` holds it. */
  renewLock(knowledgeBaseId: string, worker: string, leaseUntil: Date): Promise<boolean>;
  releaseLock(knowledgeBaseId: string, worker: string): Promise<void>;
  /** Writes progress on an unfinished job; false when it has finished (cancelled while queued) or is gone. */
  updateUnfinishedJob(id: string, progress: JobProgress, at: Date): Promise<boolean>;
}
