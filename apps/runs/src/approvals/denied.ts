import { errorArtifact } from "../griptape.ts";
import type { ToolCall } from "../models/port.ts";
import type { ApprovalDecision } from "../store/pending-approval.ts";
import { boundedText } from "../tools/artifact-text.ts";
import type { ToolCallOutcome } from "../tools/call-tool.ts";
import { deadlineDecider } from "./deadline.ts";

/**
 * A denied call's result: not made, the model told who denied it and why
 * (docs/behaviour.md §5, "Approval of tool calls"), so it can answer without it.
 */
export function deniedOutcome(call: ToolCall, decision: ApprovalDecision, maxChars: number): ToolCallOutcome {
  const message =
    decision.by === deadlineDecider
      ? "the call was not made: nobody approved it before its deadline"
      : `the call was denied by a person (user ${decision.by})${decision.reason ? `: ${decision.reason}` : ""}`;
  return { artifact: errorArtifact(message, `${call.id} output`), text: boundedText(message, maxChars), isError: true };
}
