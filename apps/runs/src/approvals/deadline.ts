import type { RunLog } from "../run-log.ts";
import { type PendingApproval, undecided } from "../store/pending-approval.ts";
import type { RunQueue } from "../store/run-queue.ts";
import type { RunRecord, RunRecordStore } from "../store/run-records.ts";
import { decisionEvent, resuming } from "./decide.ts";
import { logUnloggedNotes, settlePaused } from "./notes.ts";

/** Who decides at the deadline, in a decision's `by`. */
export const deadlineDecider = "loom";

/**
 * A paused run past its deadline (docs/decisions.md, "Approval of tool
 * calls"): each undecided call is denied by Loom, told by a SYSTEM event as a
 * person's decision is, and the run goes back to the queue to resume. A run
 * whose calls were all decided already (its decider failed before it could
 * re-queue it) is settled: its events written, re-queued. False when someone decided or cancelled in
 * between: the next sweep looks again.
 */
export async function denyAtDeadline(
  deps: { store: RunRecordStore & RunQueue; log: RunLog },
  run: RunRecord & { pending: PendingApproval },
  at: Date,
): Promise<boolean> {
  const waiting = undecided(run.pending);
  const decision = {
    approved: false,
    reason: "no decision before the deadline",
    by: deadlineDecider,
    at: at.toISOString(),
  };
  if (waiting.length === 0) return settlePaused(deps, run, at);
  // The denials' events are kept with the move until written, after any an earlier move left unwritten.
  const next: PendingApproval = {
    ...run.pending,
    calls: run.pending.calls.map((c) => (waiting.includes(c) ? { ...c, decision } : c)),
    unlogged: [...(run.pending.unlogged ?? []), ...waiting.map((call) => decisionEvent({ call, decision }))],
  };
  const moved = await deps.store.transition(
    run.id,
    { from: ["RUNNING"], unheld: true, pending: run.pending },
    "RUNNING",
    { pending: next, statusDetail: resuming },
    at,
  );
  if (!moved) return false;
  const logged = await logUnloggedNotes(deps, { ...moved, pending: next }, at, run.pending.unlogged?.length ?? 0);
  if (!logged) return false; // changed meanwhile (cancelled): the sweep looks again
  await deps.store.requeuePaused(logged, at);
  return true;
}
