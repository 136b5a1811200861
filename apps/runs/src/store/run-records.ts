import type { JsonObject } from "@bufbuild/protobuf";
import type { IdArray } from "@loom/contracts/id-arrays";
import type { Page } from "@loom/contracts/paging";
import type { RunStatus } from "@loom/contracts/run-lifecycle";
import type { MessageContent } from "./messages.ts";
import type { PendingApproval } from "./pending-approval.ts";

// The statuses are named once, in @loom/contracts (the events service and the gateway know them too).
export { activeStatuses, isTerminal, type RunStatus, runStatuses } from "@loom/contracts/run-lifecycle";

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
  /** The user message the model receives: the rendered input (docs/behaviour.md §5). */
  message: string;
  /**
   * The run's rulesets as the model's system instruction, rendered when the
   * run was created (docs/behaviour.md §5): later edits of the rules do not
   * change it. Absent without rulesets (and on runs stored before rulesets).
   */
  instructions?: string;
  /** The JSON schema the answer must follow: the run's first JSON-schema rule, read with `instructions`. */
  outputSchema?: JsonObject;
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
  /**
   * A SUCCEEDED run's turn still to be appended to its thread (MongoDB only,
   * between its move and the append; SQLite appends it with the move). While
   * set, the run keeps its thread (docs/decisions.md, "Threads and their messages").
   */
  threadMessage?: MessageContent;
  /**
   * A RUNNING run paused for approval of its tool calls (no worker, no
   * lease): what it needs to continue (docs/decisions.md, "Approval of tool calls").
   */
  pending?: PendingApproval;
}

/** When a transition may happen: the run's status is one of `from`, and the other fields, when given, hold too. */
export interface RunGuard {
  from: readonly RunStatus[];
  /** The worker that must hold the run. */
  worker?: string;
  /** The run's lease must have run out before this time (the reaper's guard against a renewal in between). */
  leaseExpiredBefore?: Date;
  /** No worker may hold the run (a paused run, taken back up by a claim). */
  unheld?: boolean;
  /** The run's pending approval must be this one, as read (a decision's compare-and-set). */
  pending?: PendingApproval;
}

/** What a transition may set besides the status. */
export type RunChanges = Partial<
  Pick<RunRecord, "statusDetail" | "output" | "completedAt" | "worker" | "leaseUntil" | "threadMessage" | "pending">
>;

/** The runs themselves: stored, read, moved from status to status, and their ends logged. */
export interface RunRecordStore {
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
  listRuns(
    organizationId: string,
    assistantId: string,
    statuses: RunStatus[],
    skip: number,
    limit: number,
  ): Promise<Page<RunRecord>>;
  /**
   * The one way a run changes state: atomically, only if the guard holds.
   * Undefined when it did not, so a late writer can never leave a terminal state.
   * A move to a terminal status also marks the run's end as not logged yet
   * (its terminal event is still to be written): on SQLite in the same
   * transaction, on MongoDB just before, so no crash loses the mark.
   * Likewise a move that leaves a run paused for approval with business
   * left (`unsettled`: SYSTEM events to write, or a re-queue) marks it for
   * `unsettledApprovals`; a move that leaves it settled, takes it up or ends
   * it takes the mark away (on MongoDB only a mark made no later than the move).
   */
  transition(id: string, guard: RunGuard, to: RunStatus, changes: RunChanges, at: Date): Promise<RunRecord | undefined>;
  /** The run's terminal event is written: its end leaves `unloggedEnds`. */
  endLogged(id: string): Promise<void>;
  /** Ended runs whose terminal event is still to be written, marked before `before`, oldest first. */
  unloggedEnds(before: Date, limit: number): Promise<RunRecord[]>;
  /**
   * With a move to SUCCEEDED, `transition`'s `changes.threadMessage` is the
   * run's turn, to become its thread's next message (id: the run's id; a
   * thread deleted meanwhile gets nothing). SQLite appends it in the move's
   * transaction. MongoDB keeps it on the run (the same update: the returned
   * run has it) until this appends it: the message stored unless it is
   * already (a retry, the sweep's after a crash or a failed append, is a
   * no-op), then the mark cleared.
   */
  appendRunMessage(run: RunRecord): Promise<void>;
  /** Runs paused for approval (RUNNING, no worker) whose deadline is before `now`. */
  expiredApprovals(now: Date, limit: number): Promise<RunRecord[]>;
  /**
   * Runs paused for approval marked unsettled (`transition`) before
   * `before`, oldest mark first: what a crash after their last move left
   * undone. Marks of runs that are no longer paused and unsettled (a MongoDB
   * move that failed after its mark) are dropped.
   */
  unsettledApprovals(before: Date, limit: number): Promise<RunRecord[]>;
}
