import type { Bus } from "@loom/bus/bus";
import { failedPrecondition, invalidArgument, notFound, type Violation } from "@loom/contracts/errors";
import type { RunLog } from "../run-log.ts";
import {
  type ApprovalDecision,
  type PendingApproval,
  type PendingCall,
  undecided,
  unsettled,
} from "../store/pending-approval.ts";
import type { RunQueue } from "../store/run-queue.ts";
import type { RunRecord, RunRecordStore } from "../store/run-records.ts";
import { runSubjects } from "../subjects.ts";
import { logUnloggedNotes, settlePaused } from "./notes.ts";
import { awaitingApproval } from "./pause.ts";

/** The most characters of a decision's reason (it goes to the model with a denial). */
export const maxReasonChars = 2000;

export interface DecideDeps {
  store: RunRecordStore & RunQueue;
  log: RunLog;
  bus: Bus;
  now: () => Date;
}

export interface CallDecision {
  callId: string;
  approved: boolean;
  reason?: string;
}

/**
 * Records decisions on a paused run's calls (docs/decisions.md, "Approval of
 * tool calls"): checked, written with one guarded move that holds only if
 * nobody decided in between (read again and tried anew then), each told by a
 * SYSTEM event kept with the move until written; once none is left
 * undecided, the run goes back to the queue and the workers are told. A
 * decision the run already has, the same, is accepted and changes nothing
 * but what a lost answer's move left undone.
 */
export async function decideApprovals(
  deps: DecideDeps,
  principal: { organizationId: string; userId: string },
  runId: string,
  decisions: CallDecision[],
): Promise<RunRecord> {
  checkShape(decisions);
  for (let attempt = 0; ; attempt++) {
    const run = await deps.store.getRun(principal.organizationId, runId);
    if (!run) throw notFound("assistant run");
    const pending = awaiting(run);
    const at = deps.now();
    const fresh = newDecisions(pending, decisions, { by: principal.userId, at: at.toISOString() });
    if (fresh.length === 0) {
      // Decided already, the same way: a retry, which finishes what a lost answer's move left (events, re-queue).
      if (unsettled(pending) && (await settlePaused(deps, { ...run, pending }, at))) await tellWorkers(deps);
      return run;
    }
    if (pending.deadline <= at.getTime())
      throw failedPrecondition("the run's approval deadline has passed: its undecided calls count as denied");
    const decided = new Map(fresh.map((d) => [d.call.call.id, d.decision]));
    // The decisions' events are kept with the move until written, after any an earlier move left unwritten.
    const next: PendingApproval = {
      ...pending,
      calls: pending.calls.map((c) => (decided.has(c.call.id) ? { ...c, decision: decided.get(c.call.id)! } : c)),
      unlogged: [...(pending.unlogged ?? []), ...fresh.map(decisionEvent)],
    };
    const done = undecided(next).length === 0;
    const moved = await deps.store.transition(
      run.id,
      { from: ["RUNNING"], unheld: true, pending },
      "RUNNING",
      { pending: next, statusDetail: done ? resuming : awaitingApproval(next) },
      at,
    );
    if (!moved) {
      if (attempt < 3) continue; // decided or ended meanwhile: read again
      throw failedPrecondition("the run changed while deciding; try again");
    }
    // Written, then re-queued: a crash in between leaves the run marked, and the sweep finishes both.
    const logged =
      (await logUnloggedNotes(deps, { ...moved, pending: next }, at, pending.unlogged?.length ?? 0)) ?? moved;
    if (done) await resume(deps, logged, at);
    return logged;
  }
}

/** The status detail of a run whose calls are all decided, until a worker takes it up. */
export const resuming = { reason: "ApprovalsDecided", message: "every call is decided: the run resumes" };

/** Every decision names a call once, with a reason of bounded length: else 400, and nothing is written. */
function checkShape(decisions: CallDecision[]): void {
  const violations: Violation[] = [];
  if (decisions.length === 0) violations.push({ path: "body.decisions", message: "must hold at least one decision" });
  decisions.forEach((d, i) => {
    if (decisions.findIndex((other) => other.callId === d.callId) !== i)
      violations.push({ path: `body.decisions[${i}].call_id`, message: "is decided twice in this request" });
    if (d.reason !== undefined && d.reason.length > maxReasonChars)
      violations.push({ path: `body.decisions[${i}].reason`, message: `must be at most ${maxReasonChars} characters` });
  });
  if (violations.length > 0) throw invalidArgument(violations);
}

/** The run's pending approval, if it is paused; else 409. */
function awaiting(run: RunRecord): PendingApproval {
  if (run.status !== "RUNNING" || !run.pending || run.worker)
    throw failedPrecondition("the run is not awaiting approval");
  return run.pending;
}

/** The decisions that change something, checked against the calls awaiting one. */
function newDecisions(
  pending: PendingApproval,
  decisions: CallDecision[],
  who: { by: string; at: string },
): Array<{ call: PendingCall; decision: ApprovalDecision }> {
  const violations: Violation[] = [];
  const fresh: Array<{ call: PendingCall; decision: ApprovalDecision }> = [];
  decisions.forEach((d, i) => {
    const call = pending.calls.find((c) => c.needsApproval && c.call.id === d.callId);
    if (!call) {
      violations.push({ path: `body.decisions[${i}].call_id`, message: "is not a call this run awaits approval of" });
      return;
    }
    if (call.decision) {
      const same = call.decision.approved === d.approved && (call.decision.reason ?? "") === (d.reason ?? "");
      if (!same) throw failedPrecondition(`call ${d.callId} is decided already`);
      return;
    }
    fresh.push({
      call,
      decision: { approved: d.approved, ...(d.reason ? { reason: d.reason } : {}), ...who },
    });
  });
  if (violations.length > 0) throw invalidArgument(violations);
  return fresh;
}

/** The SYSTEM event of one decision: which call, who decided, when, how and why. */
export function decisionEvent({ call, decision }: { call: PendingCall; decision: ApprovalDecision }) {
  return {
    type: "AssistantRunApprovalDecided",
    payload: {
      call_id: call.call.id,
      ...(call.activity
        ? { tool_id: call.activity.toolId, tool: call.activity.toolName, activity: call.activity.activity }
        : {}),
      approved: decision.approved,
      ...(decision.reason ? { reason: decision.reason } : {}),
      by: decision.by,
      at: decision.at,
    },
  };
}

/** Every call decided: the run back in the queue, the workers told (a lost message is made up by their polling). */
export async function resume(deps: Pick<DecideDeps, "store" | "bus">, run: RunRecord, at: Date): Promise<void> {
  await deps.store.requeuePaused(run, at);
  await tellWorkers(deps);
}

const tellWorkers = (deps: Pick<DecideDeps, "bus">) =>
  deps.bus.publish(runSubjects.queued, new Uint8Array()).catch(() => {});
