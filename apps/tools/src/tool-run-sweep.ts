import type { Logger } from "@loom/telemetry/logger";
import { errorArtifact } from "./calls/artifacts.ts";
import type { ToolRunsStore } from "./store/port.ts";

/** Why a swept run ended: its status detail, its ErrorArtifact's value and its last log line. */
export const stoppedMessage = "the tools service handling this call stopped before it ended";

/**
 * How long after its call's time limit a run may still be ended by its call: the end's write (a slow store, a
 * process paused by the collector). A sweep does not touch a run younger than the limit plus this.
 */
export const endWriteGraceMs = 30_000;

/** Runs ended per pass; a pass that ended a full batch goes on at once. */
const batchSize = 100;

/**
 * Ends tool runs a stopped process left RUNNING (docs/behaviour.md, Tool runs): a call that was SIGKILLed,
 * out of memory or on a drained node never writes its end. Every call is bounded by TOOL_CALL_TIMEOUT_MS, so a run
 * RUNNING for longer than that plus the grace has no call left on any replica: the age bound alone guarantees a
 * sweep never ends a run still legitimately in progress elsewhere. Any replica may sweep; the store ends each run
 * only while it is still RUNNING, so two sweeps (or a sweep and a late end) never both end it.
 */
export function createToolRunSweep(deps: {
  store: ToolRunsStore;
  callTimeoutMs: number;
  logger: Logger;
  now?: () => Date;
}) {
  const { store, logger } = deps;
  const now = deps.now ?? (() => new Date());

  /** Ends every run older than the bound; gives how many it ended. */
  async function sweep(): Promise<number> {
    let total = 0;
    for (;;) {
      const at = now();
      const ended = await store.endRunsStartedBefore(
        new Date(at.getTime() - deps.callTimeoutMs - endWriteGraceMs),
        {
          status: "ERROR",
          output: errorArtifact(stoppedMessage),
          statusDetail: stoppedMessage,
          logs: [stoppedMessage],
          at,
        },
        batchSize,
      );
      total += ended;
      if (ended < batchSize) break;
    }
    if (total > 0) logger.warn({ toolRuns: total }, "ended tool runs a stopped tools service left running");
    return total;
  }

  /** Sweeps now and every `everyMs` until stopped (so a restarted process, or any replica, ends what a stop left). */
  function start(everyMs: number): { stop(): Promise<void> } {
    let sweeping: Promise<void> | undefined;
    const run = () => {
      sweeping ??= sweep()
        .then(
          () => {},
          (error: unknown) => logger.warn({ err: error }, "tool run sweep failed; trying again later"),
        )
        .finally(() => {
          sweeping = undefined;
        });
    };
    run();
    const timer = setInterval(run, everyMs);
    // The process's other work keeps it alive; the sweep alone never holds it open.
    timer.unref();
    // Waits for a pass under way, so the store is not closed beneath it.
    return { stop: async () => (clearInterval(timer), await sweeping) };
  }

  return { sweep, start };
}
