import { Code, ConnectError } from "@connectrpc/connect";

/**
 * The lifecycle events that end an assistant run's log (semantics.md §6):
 * once one is stored, nothing more is appended, so a stream that ends after
 * it has seen everything.
 */
export const terminalAssistantRunEvents: ReadonlySet<string> = new Set([
  "AssistantRunSucceeded",
  "AssistantRunFailed",
  "AssistantRunErrored",
  "AssistantRunCancelled",
]);

export function logClosed(): ConnectError {
  return new ConnectError("the run's event log is closed: its terminal event has been written", Code.FailedPrecondition);
}
