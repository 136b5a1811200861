import type { RunRecord } from "./run-records.ts";

/** A run waiting to be claimed, as the queue holds it: only what choosing needs. */
export interface QueueEntry {
  runId: string;
  organizationId: string;
  threadId?: string;
  createdAt: Date;
}

/** What is executing now, from the leases: runs per organization and the threads they hold. */
export interface ExecutingLoad {
  perOrganization: Map<string, number>;
  threads: Set<string>;
}

/**
 * The queue of runs waiting for a worker, the claims that hand a run to one
 * worker, and the leases by which a worker holds the runs it executes. A run
 * enters the queue with `RunRecordStore.insertRun` and moves from it to a
 * lease with `transition`; this port reads and settles the rest.
 */
export interface RunQueue {
  /**
   * Whether other processes may claim from this store's queue (MongoDB, shared
   * by every runs replica) or only this one (SQLite, held by one process). A
   * worker on a store of its own sees all its claims at once and may claim
   * several runs of an organization in one pass.
   */
  readonly sharedByProcesses: boolean;
  /**
   * The right to start a run, given once per run: an insert on a unique key,
   * which holds even on stores that do not isolate concurrent updates of one
   * document (FerretDB). The claimer then moves the run to STARTING. A store
   * may forget the claim of a finished run (the SQLite one does): a finished
   * run has no queue entry to be claimed through, and its guarded move to
   * STARTING would fail. A claim granted before `staleBefore` and still
   * standing was left by a claimer that failed before it could give it back
   * (`releaseClaim`): it is granted again, once, so no claim is permanent.
   */
  claimRun(id: string, worker: string, at: Date, staleBefore?: Date): Promise<boolean>;
  /** Gives back a claim that could not be used because the run is not stored yet. */
  releaseClaim(runId: string): Promise<void>;
  /** Extends a lease, only while the worker still holds the run. */
  renewLease(id: string, worker: string, leaseUntil: Date): Promise<boolean>;
  /**
   * Oldest first: queued runs outside the given organizations and threads (the
   * full and the busy ones). Read from the queue, which holds only queued runs.
   * An entry may briefly precede its run (the run is stored right after it).
   */
  queueCandidates(skipOrganizations: string[], skipThreads: string[], limit: number): Promise<QueueEntry[]>;
  /**
   * Puts a run paused for approval back in the queue, all its calls decided
   * (docs/decisions.md, "Approval of tool calls"): its claim of the first
   * start is given back, so the entry can be claimed like a new run's, and
   * the claimer takes it up with a move guarded by `unheld`. With no SYSTEM
   * events left to write, the run is settled: its mark is taken away (on
   * MongoDB only one made no later than `at`).
   */
  requeuePaused(run: RunRecord, at: Date): Promise<void>;
  /** Takes a run off the queue (it was claimed, cancelled, or never got stored). */
  dropQueueEntry(runId: string): Promise<void>;
  countQueued(organizationId: string): Promise<number>;
  /** One read of the leases: executing runs per organization, and the threads they hold. */
  executingLoad(): Promise<ExecutingLoad>;
  /** Runs held by a worker whose lease ran out before `now`. */
  expiredLeases(now: Date, limit: number): Promise<RunRecord[]>;
}
