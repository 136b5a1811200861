import { errorArtifact } from "../griptape.ts";
import type { ToolCall } from "../models/port.ts";
import type { ApprovalDecision } from "../store/pending-approval.ts";
import { boundedText } from "../tools/artifact-text.ts";
import type { ToolCallOutcome } from "../tools/call-tool.ts";

/**
 * A denied call's result: not made, the model told who denied it and why
 * (docs/behaviour.md §5, "Approval of tool calls"), so it can answer without it.
 */
export function deniedOutcome(call: ToolCall, decision: ApprovalDecision, maxChars: number): ToolCallOutcome {
  const why = decision.reason ? `: ${decision.reason}` : "";
  const message =
    decision.by === "loom"
      ? `the call was not approved before its deadline${why}`
      : `the call was denied by a person (user ${decision.by})${why}`;
  return { artifact: errorArtifact(message, `${call.id} output`), text: boundedText(message, maxChars), isError: true };
}
