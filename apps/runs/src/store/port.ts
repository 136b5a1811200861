import type { IdArray } from "@loom/contracts/id-arrays";
import type { Page } from "@loom/contracts/paging";
import type { RunStatus } from "@loom/contracts/run-lifecycle";
import type { StoreLifecycle } from "@loom/store/open";

/** How long an Idempotency-Key keeps answering with its run (semantics.md §5). */
export const idempotencyWindowMs = 24 * 60 * 60 * 1000;

// The statuses are named once, in @loom/contracts (the events service and the gateway know them too).
export { activeStatuses, isTerminal, runStatuses, terminalStatuses, type RunStatus } from "@loom/contracts/run-lifecycle";

/** An organization's queue is at its cap (`insertRun`'s `maxQueued`). */
export class QueueFull extends Error {
  readonly maxQueued: number;
  constructor(maxQueued: number) {
    super(`the organization has ${maxQueued} runs queued`);
    this.maxQueued = maxQueued;
  }
}

export interface StatusDetail {
  reason: string;
  message?: string;
}

export interface RunRecord extends Record<IdArray, string[]> {
  id: string;
  organizationId: string;
  assistantId: string;
  threadId?: string;
  args: string[];
  /** The run's own `input`, as given. */
  input?: string;
  /** The user message the model receives: the rendered input (semantics.md §5). */
  message: string;
  stream: boolean;
  status: RunStatus;
  statusDetail?: StatusDetail;
  /** The griptape TextArtifact of a successful run. */
  output?: unknown;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
  completedAt?: Date;
  /**
   * The W3C traceparent of the request that created the run, when tracing
   * was on: the worker's execution continues that trace.
   */
  traceparent?: string;
  /** Which worker holds the run, and until when, while STARTING or RUNNING. */
  worker?: string;
  leaseUntil?: Date;
}

export interface ThreadRecord {
  id: string;
  organizationId: string;
  name: string;
  alias?: string;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
  /** The run that holds the thread while it executes: one run at a time per thread. */
  activeRunId?: string;
}

export interface IdempotencyRecord {
  organizationId: string;
  key: string;
  fingerprint: string;
  /** Chosen before the run is stored: every request with the key answers this run. */
  runId: string;
  createdAt: Date;
  /** Which attempt at storing the run holds the key: 0 the first request, then each takeover of a stalled one. */
  attempt: number;
  /** When that attempt began; an attempt whose run is still missing long after is stale. */
  attemptAt: Date;
}

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

/** When a transition may happen: the run's status is one of `from`, and the other fields, when given, hold too. */
export interface RunGuard {
  from: readonly RunStatus[];
  /** The worker that must hold the run. */
  worker?: string;
  /** The run's lease must have run out before this time (the reaper's guard against a renewal in between). */
  leaseExpiredBefore?: Date;
}

/** What a transition may set besides the status. */
export type RunChanges = Partial<Pick<RunRecord, "statusDetail" | "output" | "completedAt" | "worker" | "leaseUntil">>;

export interface RunsStore extends StoreLifecycle {
  /**
   * Whether other processes may claim from this store's queue (MongoDB, shared
   * by every runs replica) or only this one (SQLite, held by one process). A
   * worker on a store of its own sees all its claims at once and may claim
   * several runs of an organization in one pass.
   */
  readonly sharedByProcesses: boolean;
  /**
   * Resolves once every write made so far is on disk. The store's calls may
   * resolve before (on SQLite they do: the worker's steps do not wait for
   * the disk); the service awaits this before it answers, so whatever a
   * caller is told survives a crash. On MongoDB every write is acknowledged
   * by the server already.
   */
  durable(): Promise<void>;
  /**
   * Stores a run (and, if QUEUED, its queue entry first); false when a run
   * with its id exists. With `maxQueued`, a QUEUED run whose organization has
   * that many queued already is refused with `QueueFull` and nothing is
   * stored: checked with the write, so concurrent creates (on any replica)
   * never take the organization past it.
   */
  insertRun(run: RunRecord, maxQueued?: number): Promise<boolean>;
  getRun(organizationId: string, id: string): Promise<RunRecord | undefined>;
  /** By id alone: for the worker, which acts for whichever organization a run belongs to. */
  getRunById(id: string): Promise<RunRecord | undefined>;
  /** Newest first; an empty `statuses` means every status. */
  listRuns(organizationId: string, assistantId: string, statuses: RunStatus[], skip: number, limit: number): Promise<Page<RunRecord>>;
  /**
   * The one way a run changes state: atomically, only if the guard holds.
   * Undefined when it did not, so a late writer can never leave a terminal state.
   * A move to a terminal status also marks the run's end as not logged yet
   * (its terminal event is still to be written): on SQLite in the same
   * transaction, on MongoDB just before, so no crash loses the mark.
   */
  transition(id: string, guard: RunGuard, to: RunStatus, changes: RunChanges, at: Date): Promise<RunRecord | undefined>;
  /** The run's terminal event is written: its end leaves `unloggedEnds`. */
  endLogged(id: string): Promise<void>;
  /** Ended runs whose terminal event is still to be written, marked before `before`, oldest first. */
  unloggedEnds(before: Date, limit: number): Promise<RunRecord[]>;
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
  /** Extends a lease, only while the worker still holds the run. */
  renewLease(id: string, worker: string, leaseUntil: Date): Promise<boolean>;
  /**
   * Oldest first: queued runs outside the given organizations and threads (the
   * full and the busy ones). Read from the queue, which holds only queued runs.
   * An entry may briefly precede its run (the run is stored right after it).
   */
  queueCandidates(skipOrganizations: string[], skipThreads: string[], limit: number): Promise<QueueEntry[]>;
  /** Takes a run off the queue (it was claimed, cancelled, or never got stored). */
  dropQueueEntry(runId: string): Promise<void>;
  /** Gives back a claim that could not be used because the run is not stored yet. */
  releaseClaim(runId: string): Promise<void>;
  countQueued(organizationId: string): Promise<number>;
  /** One read of the leases: executing runs per organization, and the threads they hold. */
  executingLoad(): Promise<ExecutingLoad>;
  /** Runs held by a worker whose lease ran out before `now`. */
  expiredLeases(now: Date, limit: number): Promise<RunRecord[]>;
  /** Earlier runs of a thread that succeeded, oldest first: the conversation so far. */
  threadHistory(threadId: string, before: Date): Promise<RunRecord[]>;

  insertThread(thread: ThreadRecord): Promise<void>;
  getThread(organizationId: string, id: string): Promise<ThreadRecord | undefined>;
  listThreads(organizationId: string, alias: string | undefined, skip: number, limit: number): Promise<Page<ThreadRecord>>;
  deleteThread(organizationId: string, id: string): Promise<boolean>;
  /**
   * Takes a thread for a run: succeeds if it is free, already this run's, or
   * held by a run in `staleHolders` (one that has ended). True also when the
   * thread no longer exists (nothing to serialize against).
   */
  lockThread(threadId: string, runId: string, staleHolders: string[]): Promise<{ locked: boolean; holder?: string }>;
  unlockThread(threadId: string, runId: string): Promise<void>;

  /** Records a key for a run; false when the key is already taken (read it with getIdempotency). */
  putIdempotency(record: IdempotencyRecord): Promise<boolean>;
  /**
   * The record, unless it was created before `createdAfter`: records expire
   * after `idempotencyWindowMs`, and the store prunes them (a TTL index on
   * MongoDB, which removes them only every minute or so: hence this check).
   */
  getIdempotency(organizationId: string, key: string, createdAfter: Date): Promise<IdempotencyRecord | undefined>;
  /** Deletes the record only while it still names `runId` (an expired record, or a create that failed). */
  deleteIdempotency(organizationId: string, key: string, runId: string): Promise<void>;
  /**
   * Takes the key over from a stalled attempt: granted to one caller per
   * attempt number (a unique insert), which then records its own attempt.
   */
  takeOverIdempotency(organizationId: string, key: string, attempt: number, at: Date): Promise<boolean>;
}
