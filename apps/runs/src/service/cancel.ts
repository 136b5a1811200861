import type { Bus } from "@loom/bus/bus";
import { notFound } from "@loom/contracts/errors";
import type { Logger } from "@loom/telemetry/logger";
import { countTransition } from "../metrics.ts";
import { logEnd } from "../run-end.ts";
import type { RunLog } from "../run-log.ts";
import { activeStatuses, isTerminal, type RunRecord, type RunRecordStore } from "../store/run-records.ts";
import { runSubjects } from "../subjects.ts";

export interface CancelDeps {
  store: RunRecordStore;
  log: RunLog;
  bus: Bus;
  logger: Logger;
  now: () => Date;
}

/**
 * Cancels a run of the organization and answers it as it stands after: a run
 * that has ended is answered as it is; one cancelled already has its end
 * told again (a retried cancel whose first did not get through).
 */
export async function cancelRun(deps: CancelDeps, organizationId: string, runId: string): Promise<RunRecord> {
  const { store } = deps;
  const run = await store.getRun(organizationId, runId);
  if (!run) throw notFound("assistant run");
  if (run.status === "CANCELLED") {
    // A cancel retried after one whose terminal event or message did not get through: both again.
    await tellEnded(deps, run);
    return run;
  }
  if (isTerminal(run.status)) return run;
  const at = deps.now();
  const cancelled = await store.transition(
    run.id,
    { from: activeStatuses },
    "CANCELLED",
    {
      statusDetail: { reason: "Cancelled", message: "cancelled by request" },
      completedAt: at,
      leaseUntil: undefined,
      // A run paused for approval drops what it waited with (docs/decisions.md, "Approval of tool calls").
      ...(run.pending ? { pending: undefined } : {}),
    },
    at,
  );
  if (!cancelled) return (await store.getRun(organizationId, run.id))!; // ended meanwhile
  countTransition(run.status, "CANCELLED"); // as read just before: a run that moved on in between counts from its earlier status
  await tellEnded(deps, cancelled);
  // CANCELLED is written, so the answer says so: an event that could not be written yet is the sweep's to write.
  return cancelled;
}

/**
 * After a cancel: the replica whose worker holds the run is told to abort
 * its model call (a lost message is made up for by its lease renewal, which
 * finds the run no longer its own), then the terminal event is written.
 */
async function tellEnded(deps: CancelDeps, cancelled: RunRecord): Promise<void> {
  await deps.bus
    .publish(runSubjects.control(cancelled.id), new TextEncoder().encode("cancel"))
    .catch((error: unknown) => {
      deps.logger.warn(
        { err: error, run_id: cancelled.id },
        "could not tell the run's worker of its cancel; its lease renewal will",
      );
    });
  await logEnd(cancelled, deps);
}
