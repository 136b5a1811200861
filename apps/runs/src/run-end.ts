import type { Logger } from "@loom/telemetry/logger";
import type { RunLog } from "./run-log.ts";
import type { RunRecord, RunRecordStore } from "./store/run-records.ts";

/**
 * Waits before each retry of a terminal event, in milliseconds: about a second
 * in all, enough for a blip (a reset, a restart under a load balancer). Past
 * that the worker's sweep writes it (docs/decisions.md, "Runs").
 */
export const endRetryDelaysMs = [100, 300, 600] as const;

export interface EndDeps {
  store: RunRecordStore;
  log: RunLog;
  logger: Logger;
}

/**
 * Writes an ended run's terminal event, which closes its log (so every stream
 * of it ends), then clears the store's mark of an unlogged end. Tried once and
 * retried after each of `retryDelaysMs`; true once written. An append refused
 * because the log is closed already counts as written (the run-log drops it).
 * On false the mark stays and the sweep tries again (tried once, with no
 * retries, a failure is the caller's to report).
 */
export async function logEnd(
  ended: RunRecord,
  deps: EndDeps,
  retryDelaysMs: readonly number[] = endRetryDelaysMs,
): Promise<boolean> {
  for (let attempt = 0; ; attempt++) {
    try {
      await deps.log.lifecycle(ended);
      await deps.store.endLogged(ended.id);
      return true;
    } catch (error) {
      if (attempt >= retryDelaysMs.length) {
        // Tried once (the sweep): it says how many at once, not a line per run every second.
        if (retryDelaysMs.length > 0)
          deps.logger.warn(
            { err: error, run_id: ended.id, status: ended.status },
            "could not write the run's terminal event; the sweep will",
          );
        return false;
      }
      await new Promise((resolve) => setTimeout(resolve, retryDelaysMs[attempt]));
    }
  }
}
