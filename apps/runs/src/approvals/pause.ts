import type { Logger } from "@loom/telemetry/logger";
import type { RunLog } from "../run-log.ts";
import { type PendingApproval, undecided } from "../store/pending-approval.ts";
import type { RunRecord, RunRecordStore, StatusDetail } from "../store/run-records.ts";
import { logUnloggedNotes } from "./notes.ts";

export interface PauseDeps {
  store: RunRecordStore;
  log: RunLog;
  logger: Logger;
  workerId: string;
  now: () => Date;
}

/**
 * Pauses a run held by this worker whose step calls an activity needing
 * approval (docs/decisions.md, "Approval of tool calls"): one guarded move
 * keeps what it needs to go on and lets go of the worker and the lease, so it
 * holds no slot and the sweep does not reap it; it stays RUNNING, saying
 * what awaits approval, and a SYSTEM event says so too (kept with the move
 * until written). False when the run
 * was no longer this worker's (cancelled, reaped): whoever took it wrote its end.
 */
export async function pauseRun(run: RunRecord, pending: PendingApproval, deps: PauseDeps): Promise<boolean> {
  const at = deps.now();
  // The event is kept with the pause until it is written: a crash in between leaves it for the sweep.
  const marked: PendingApproval = { ...pending, unlogged: [awaitingApprovalEvent(pending)] };
  const paused = await deps.store.transition(
    run.id,
    { from: ["RUNNING"], worker: deps.workerId },
    "RUNNING",
    { pending: marked, statusDetail: awaitingApproval(pending), worker: undefined, leaseUntil: undefined },
    at,
  );
  if (!paused) return false;
  try {
    await logUnloggedNotes(deps, { ...paused, pending: marked }, at, 0);
  } catch (error) {
    // The run is paused and says so (its status detail); the event is what could not be written yet.
    deps.logger.warn(
      { err: error, run_id: run.id },
      "could not write the run's awaiting-approval event; the sweep will",
    );
  }
  return true;
}

/** The status detail of a paused run: which calls await approval, and until when. */
export function awaitingApproval(pending: PendingApproval): StatusDetail {
  const waiting = undecided(pending).map(
    ({ call, activity }) => `${activity ? `${activity.toolName}.${activity.activity}` : call.name} (call ${call.id})`,
  );
  return {
    reason: "AwaitingApproval",
    message: `awaiting approval of ${waiting.join(", ")} until ${new Date(pending.deadline).toISOString()}`,
  };
}

/** The SYSTEM event of a pause: every call waiting (its id, tool, activity and input: the model's) and the deadline. */
function awaitingApprovalEvent(pending: PendingApproval) {
  return {
    type: "AssistantRunAwaitingApproval",
    payload: {
      calls: undecided(pending).map(({ call, activity }) => ({
        call_id: call.id,
        ...(activity ? { tool_id: activity.toolId, tool: activity.toolName, activity: activity.activity } : {}),
        input: call.input,
      })),
      deadline: new Date(pending.deadline).toISOString(),
    },
  };
}
