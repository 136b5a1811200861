import { useState } from "preact/hooks";
import type { ApprovalCall } from "../runs/api.ts";
import { ErrorNote } from "../ui/error-note.tsx";
import { useAction } from "../ui/use-action.ts";
import { decideApproval } from "./api.ts";

/**
 * A tool call the run waits on, answered in place: "Approve", or "Deny" with
 * an optional reason the model is told (Enter in the reason denies). The
 * decision then arrives as the run's own event, and the run goes on.
 */
export function ApprovalForm({
  apiKey,
  runId,
  call,
  what,
  input,
}: {
  apiKey: string;
  runId: string;
  call: ApprovalCall;
  what: string;
  input: string;
}) {
  const [reason, setReason] = useState("");
  const { busy, error, run } = useAction();
  const fieldId = `deny-reason-${call.call_id}`;
  // `run` keeps its own error for the form to show: nothing to await here.
  const decide = (approved: boolean) =>
    void run(() => decideApproval(apiKey, runId, call.call_id, approved, approved ? undefined : reason.trim()));

  return (
    <form
      class="approval"
      aria-label={`Approve ${what}?`}
      onSubmit={(e) => {
        e.preventDefault();
        decide(false);
      }}
    >
      <span class="question">
        Awaiting approval: <span class="name">{what}</span> <code>{input}</code>
      </span>
      <button type="button" disabled={busy} onClick={() => decide(true)}>
        Approve
      </button>
      <label for={fieldId}>Reason for denying</label>
      <input id={fieldId} value={reason} maxLength={2000} onInput={(e) => setReason(e.currentTarget.value)} />
      <button type="submit" disabled={busy}>
        Deny
      </button>
      <ErrorNote error={error} />
    </form>
  );
}
