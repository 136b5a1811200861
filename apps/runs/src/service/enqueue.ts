import { Code, ConnectError } from "@connectrpc/connect";
import type { Bus } from "@loom/bus/bus";
import { countTransition } from "../metrics.ts";
import type { RunLog } from "../run-log.ts";
import { QueueFull, type RunRecord, type RunRecordStore } from "../store/run-records.ts";
import type { ThreadStore } from "../store/threads.ts";
import { runSubjects } from "../subjects.ts";
import { type NewRun, queueFull } from "./new-run.ts";

export interface EnqueueDeps {
  store: RunRecordStore & ThreadStore;
  log: RunLog;
  bus: Bus;
  maxQueuedPerOrganization: number;
}

/**
 * Stores a new run: its first event, then the run: with the events service
 * down the create fails and no run exists. A run stored by another attempt
 * with the same id (a keyed create taken over) wins; `takeover` skips the
 * event if the stalled attempt already wrote it. Then the workers are told.
 */
export async function enqueue(deps: EnqueueDeps, { run, newThread }: NewRun, takeover: boolean): Promise<RunRecord> {
  const { store } = deps;
  try {
    if (!takeover || !(await deps.log.started(run))) await deps.log.lifecycle(run);
  } catch (error) {
    throw new ConnectError(
      "the run could not be queued: its event log is unavailable",
      Code.Unavailable,
      undefined,
      undefined,
      error,
    );
  }
  if (newThread) await store.insertThread(newThread, []);
  let inserted: boolean;
  try {
    inserted = await store.insertRun(run, deps.maxQueuedPerOrganization);
  } catch (error) {
    if (!(error instanceof QueueFull)) throw error;
    // Filled by creates at the same time: refused, and the thread made for it goes (its log keeps one event, as a create that died).
    if (newThread) await store.deleteThread(newThread.organizationId, newThread.id);
    throw queueFull(deps.maxQueuedPerOrganization);
  }
  if (!inserted) return (await store.getRunById(run.id))!;
  countTransition("NONE", "QUEUED");
  await deps.bus.publish(runSubjects.queued, new Uint8Array());
  return run;
}
