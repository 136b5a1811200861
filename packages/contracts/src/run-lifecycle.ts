/**
 * A run's statuses and their lifecycle events (docs/behaviour.md §5, §6), named in
 * one place: the runs service writes them, the events service closes a log
 * at a terminal one, the gateway validates and documents them. Like the bus
 * subjects, part of the contract between services; the statuses are the
 * `loom.runs.v1.RunStatus` enum's values by name (a test holds them together).
 */
export const runStatuses = ["QUEUED", "STARTING", "RUNNING", "SUCCEEDED", "FAILED", "ERROR", "CANCELLED"] as const;
export type RunStatus = (typeof runStatuses)[number];

export const terminalStatuses: readonly RunStatus[] = ["SUCCEEDED", "FAILED", "ERROR", "CANCELLED"];
export const activeStatuses: readonly RunStatus[] = ["QUEUED", "STARTING", "RUNNING"];
/** Whether a status (as stored, or as a client reads it) is one a run never leaves. */
export const isTerminal = (status: string) => (terminalStatuses as readonly string[]).includes(status);

/** The lifecycle event type (origin SYSTEM) of each status. */
export const lifecycleEventType: Readonly<Record<RunStatus, string>> = {
  QUEUED: "AssistantRunQueued",
  STARTING: "AssistantRunStarting",
  RUNNING: "AssistantRunRunning",
  SUCCEEDED: "AssistantRunSucceeded",
  FAILED: "AssistantRunFailed",
  ERROR: "AssistantRunErrored",
  CANCELLED: "AssistantRunCancelled",
};

/** The lifecycle events that end an assistant run's log: those of the terminal statuses. */
export const terminalLifecycleEvents: ReadonlySet<string> = new Set(
  terminalStatuses.map((status) => lifecycleEventType[status]),
);
