import type { ActionsSubtask, TextArtifact } from "../griptape.ts";
import type { ModelTurn, ToolCall } from "../models/port.ts";
import type { RunActivity } from "../tools/run-tools.ts";

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
}

/** The calls still waiting for a person's decision. */
export const undecided = (pending: PendingApproval): PendingCall[] =>
  pending.calls.filter((c) => c.needsApproval && c.decision === undefined);
