import type { RunEvent } from "../api/event-stream.ts";
import type { ApprovalCall, Artifact, AssistantRun, Citation } from "../runs/api.ts";
import type { Message } from "./api.ts";

/** A tool call a run made, as its events tell it: what was called with what, and its result once it ended. */
export interface ToolCall {
  tag: string;
  tool: string;
  activity: string;
  input: unknown;
  result?: string;
  failed?: boolean;
}

/**
 * One exchange of the conversation: what the person said and the assistant's
 * answer, with what happened in between (tool calls, approvals awaited), as a
 * stored message gives it or as a run's events build it up.
 */
export interface Turn {
  /** The run's id (a run's message has the same id), else the message's. */
  key: string;
  runId?: string;
  input: string;
  answer: string;
  /** The run has not ended: its events are being followed. */
  running: boolean;
  error?: string;
  toolCalls: ToolCall[];
  /** The calls the run paused on, with their decisions once made. */
  approvals: ApprovalCall[];
  citations: Citation[];
}

const isArtifact = (value: unknown): value is Artifact =>
  typeof value === "object" && value !== null && String((value as { type?: unknown }).type).endsWith("Artifact");

/**
 * The text of an artifact as griptape reads it: a text's value, a list's
 * items one a line, JSON as JSON; a stored string that is no artifact's JSON
 * is itself (messages written by other clients).
 */
export function artifactText(stored: unknown): string {
  let value = stored;
  if (typeof stored === "string") {
    try {
      value = JSON.parse(stored);
    } catch {
      return stored;
    }
    if (!isArtifact(value)) return stored;
  }
  if (!isArtifact(value)) return typeof value === "string" ? value : JSON.stringify(value);
  if (Array.isArray(value.value)) return value.value.map(artifactText).join("\n");
  return typeof value.value === "string" ? value.value : JSON.stringify(value.value);
}

/** The citations a stored answer carries (`meta.citations`), none for any other string. */
function citationsOf(stored: unknown): Citation[] {
  try {
    const value = typeof stored === "string" ? JSON.parse(stored) : stored;
    return isArtifact(value) ? (value.meta?.citations ?? []) : [];
  } catch {
    return [];
  }
}

export function turnOfMessage(message: Message): Turn {
  return {
    key: message.message_id,
    runId: message.metadata.run_id,
    input: artifactText(message.input),
    answer: artifactText(message.output),
    running: false,
    toolCalls: [],
    approvals: [],
    citations: citationsOf(message.output),
  };
}

/** A run not yet ended, as its turn starts: followed from here on; the calls it waits on, if paused. */
export const turnOfRun = (run: AssistantRun, input: string): Turn => ({
  key: run.assistant_run_id,
  runId: run.assistant_run_id,
  input,
  answer: "",
  running: true,
  toolCalls: [],
  approvals: run.status_detail?.reason === "AwaitingApproval" ? (run.status_detail.calls ?? []) : [],
  citations: [],
});

/** What a run that did not succeed says: its status and its `status_detail`. */
function failureOf(status: string, detail: AssistantRun["status_detail"]): string {
  const why = detail ? `${detail.reason}${detail.message ? `: ${detail.message}` : ""}` : "no detail given";
  return `The run ended ${status} (${why}).`;
}

/** The turn once its run ended (its stream closes only then): the final output replaces the streamed text. */
export function withEnd(turn: Turn, run: AssistantRun): Turn {
  return {
    ...turn,
    running: false,
    answer: run.output ? artifactText(run.output) : turn.answer,
    citations: run.output ? citationsOf(run.output) : turn.citations,
    error: run.status === "SUCCEEDED" ? undefined : failureOf(run.status, run.status_detail),
  };
}

type Payload = Record<string, any>;

/** The turn after one of its run's events (docs/behaviour.md §6): the answer grows, tool calls start and end, approvals are asked and decided. */
export function withEvent(turn: Turn, event: RunEvent): Turn {
  const payload = event.payload as Payload;
  switch (event.type) {
    case "TextChunkEvent":
      return { ...turn, answer: turn.answer + String(payload.token ?? "") };
    case "StartActionsSubtaskEvent":
      return { ...turn, toolCalls: [...turn.toolCalls, ...(payload.subtask_actions ?? []).map(toolCallOf)] };
    case "FinishActionsSubtaskEvent":
      return { ...turn, toolCalls: withResults(turn.toolCalls, payload.task_output) };
    case "AssistantRunAwaitingApproval":
      return { ...turn, approvals: payload.calls ?? [] };
    case "AssistantRunApprovalDecided":
      return {
        ...turn,
        approvals: turn.approvals.map((call) =>
          call.call_id === payload.call_id
            ? { ...call, decision: { approved: payload.approved, reason: payload.reason } }
            : call,
        ),
      };
    case "FinishStructureRunEvent":
      return { ...turn, answer: artifactText(payload.output_task_output) };
    case "AssistantRunFailed":
    case "AssistantRunErrored":
    case "AssistantRunCancelled":
      return { ...turn, running: false, error: failureOf(String(payload.status), payload.status_detail) };
    default:
      return turn;
  }
}

const toolCallOf = (action: Payload): ToolCall => ({
  tag: String(action.tag ?? ""),
  tool: String(action.name ?? ""),
  activity: String(action.path ?? ""),
  input: action.input ?? {},
});

/** Each call's result: the finished step's artifacts are named `<tag> output`; a failed call's is an ErrorArtifact. */
function withResults(calls: ToolCall[], output: unknown): ToolCall[] {
  const results = isArtifact(output) && Array.isArray(output.value) ? (output.value as Artifact[]) : [];
  return calls.map((call) => {
    const result = results.find((r) => r.name === `${call.tag} output`);
    return result && call.result === undefined
      ? { ...call, result: artifactText(result), failed: result.type === "ErrorArtifact" }
      : call;
  });
}
