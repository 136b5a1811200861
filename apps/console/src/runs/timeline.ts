import type { RunEvent } from "../api/event-stream.ts";

/**
 * One row of a run's timeline: one event, or consecutive chunks of one
 * streamed answer (TextChunkEvent, ActionChunkEvent) merged, so an answer of
 * hundreds of tokens is one growing row, not hundreds.
 */
export interface TimelineRow {
  /** The offset of its first event: a stable key while the row grows. */
  offset: number;
  events: RunEvent[];
}

const mergedTypes = new Set(["TextChunkEvent", "ActionChunkEvent"]);

/** The rows of a log, in its order (`events[i]` at offset `offsets[i]`). */
export function timelineRows(events: { event: RunEvent; offset: number }[]): TimelineRow[] {
  const rows: TimelineRow[] = [];
  for (const { event, offset } of events) {
    const last = rows.at(-1);
    if (last && mergedTypes.has(event.type) && last.events[0]!.type === event.type) last.events.push(event);
    else rows.push({ offset, events: [event] });
  }
  return rows;
}

type Payload = Record<string, any>;

/** What a row says, short, for a person: the text streamed, the model prompted, the status reached, … ("" when nothing is worth saying). */
export function rowSummary(row: TimelineRow): string {
  const first = row.events[0]!;
  const payload = (first.payload ?? {}) as Payload;
  switch (first.type) {
    case "TextChunkEvent":
      return row.events.map((e) => text((e.payload as Payload | null)?.token)).join("");
    case "ActionChunkEvent":
      return [actionName(payload), row.events.map((e) => text((e.payload as Payload | null)?.partial_input)).join("")]
        .filter(Boolean)
        .join(" ");
    case "StartPromptEvent":
      return `model ${text(payload.model)}`;
    case "FinishPromptEvent":
      return `model ${text(payload.model)}, ${payload.input_token_count ?? "?"} tokens in, ${payload.output_token_count ?? "?"} out`;
    case "StartStructureRunEvent":
      return text(payload.input_task_input?.value);
    case "FinishStructureRunEvent":
      return text(payload.output_task_output?.value);
    case "StartActionsSubtaskEvent":
    case "FinishActionsSubtaskEvent":
      return list(payload.subtask_actions).map(actionName).join(", ");
    case "AssistantRunToolUnavailable":
    case "AssistantRunKnowledgeBaseUnavailable":
      return text(payload.error);
    case "AssistantRunAwaitingApproval":
      return `${list(payload.calls).length} call(s) await approval`;
    case "AssistantRunApprovalDecided":
      return `${actionName({ name: payload.tool, path: payload.activity })} ${payload.approved ? "approved" : "denied"}`;
    case "AssistantRunKnowledgeRetrieval":
      return `${list(payload.hits).length} passage(s) for "${text(payload.query)}"`;
  }
  // A lifecycle event (AssistantRunQueued … AssistantRunCancelled): the status reached, and why.
  if (typeof payload.status === "string") {
    const detail = payload.status_detail as Payload | undefined;
    return [payload.status, detail?.message ?? detail?.reason].filter(Boolean).join(": ");
  }
  return "";
}

const list = (value: unknown): Payload[] => (Array.isArray(value) ? value : []);

/** `tool.activity`, as a run's events name a call. */
const actionName = (action: Payload | null) => [action?.name, action?.path].filter(Boolean).map(text).join(".");

/** Whatever a payload holds there, as text (a payload is any JSON: never assume its shape). */
const text = (value: unknown) => (value == null ? "" : typeof value === "string" ? value : JSON.stringify(value));
