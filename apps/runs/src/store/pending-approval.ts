import type { ActionsSubtask, TextArtifact } from "../griptape.ts";
import type { ModelTurn, ToolCall } from "../models/port.ts";
import type { RunActivity } from "../tools/run-tools.ts";
import type { RunRecord } from "./run-records.ts";

/** Who decided a call, how, when (ISO time) and why (docs/behaviour.md §5, "Approval of tool calls"). */
export interface ApprovalDecision {
  approved: boolean;
  reason?: string;
  /** The deciding user's id, or "loom" for a call denied at the deadline. */
  by: string;
  at: string;
}

/** One call of the step that waits: every call of the step is kept, those needing no approval too. */
export interface PendingCall {
  call: ToolCall;
  /** Where the call goes; absent for a name the run's tools do not have (the model is told so). */
  activity?: RunActivity;
  needsApproval: boolean;
  decision?: ApprovalDecision;
}

/**
 * What a run paused for approval keeps to continue on any worker, later:
 * the step whose calls wait, the conversation so far (the model's turns and
 * griptape's prompt stack, without this step's calls), the griptape
 * identities its later events reuse, and the deadline (ms since the epoch).
 */
export interface PendingApproval {
  step: number;
  turns: ModelTurn[];
  promptStack: object[];
  /** The run's input artifact and prompt task, as its first events named them. */
  input: TextArtifact;
  promptTaskId: string;
  subtask: ActionsSubtask;
  calls: PendingCall[];
  deadline: number;
  /**
   * SYSTEM events of the pause and of decisions, in log order, written with
   * the move that made them and cleared once they are in the run's log: a
   * crash in between leaves them here for the sweep (or the next decision,
   * or the worker that resumes the run) to write first (docs/decisions.md,
   * "Approval of tool calls").
   */
  unlogged?: SystemNote[];
}

/** A SYSTEM event of Loom's own about a run, as the run log writes it. */
export interface SystemNote {
  type: string;
  payload: object;
}

/** The calls still waiting for a person's decision. */
export const undecided = (pending: PendingApproval): PendingCall[] =>
  pending.calls.filter((c) => c.needsApproval && c.decision === undefined);

/**
 * Whether a paused run has business left after its last move: SYSTEM
 * events to write, or every call decided and the run to put back in the
 * queue. Such a run is marked for the sweep by the move itself.
 */
export const unsettled = (pending: PendingApproval): boolean =>
  (pending.unlogged?.length ?? 0) > 0 || undecided(pending).length === 0;

/** A run paused for approval (RUNNING, no worker) with business left: what the stores mark for the sweep. */
export const pausedUnsettled = (run: RunRecord): boolean =>
  run.status === "RUNNING" && !run.worker && run.pending !== undefined && unsettled(run.pending);
