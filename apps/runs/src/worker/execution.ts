import type { Logger } from "@loom/telemetry/logger";
import { contextOf, inSpan, SpanKind } from "@loom/telemetry/tracing";
import type { AgentLoopSettings } from "../agent-loop.ts";
import { type ExecuteDeps, executeRun, type StopReason } from "../executor.ts";
import type { HistoryWindow } from "../history.ts";
import { trackExecuting } from "../metrics.ts";
import type { Model } from "../models/port.ts";
import type { RunLog } from "../run-log.ts";
import type { MessageStore } from "../store/messages.ts";
import type { RunQueue } from "../store/run-queue.ts";
import type { RunRecord, RunRecordStore } from "../store/run-records.ts";
import type { ThreadStore } from "../store/threads.ts";

export interface ExecutionDeps {
  store: RunRecordStore & RunQueue & ThreadStore & MessageStore;
  log: RunLog;
  model: Model;
  tools?: AgentLoopSettings;
  knowledge?: ExecuteDeps["knowledge"];
  logger: Logger;
  workerId: string;
  /** How long a claim lasts without renewal; renewed every third of it. */
  leaseMs: number;
  runTimeoutMs: number;
  historyWindow: HistoryWindow;
  now: () => Date;
}

/** A run this worker executes: its abort (a cancel, the timeout, a lost lease) and its end. */
export interface Execution {
  controller: AbortController;
  done: Promise<void>;
}

/**
 * Executes a claimed run (`executeRun`) while holding it: its lease renewed,
 * its timeout armed, in a span that continues the trace of the request that
 * created it. `finished` is called once it is done and its thread let go.
 */
export function startExecution(run: RunRecord, deps: ExecutionDeps, finished: () => void): Execution {
  const { store, logger, workerId, now } = deps;
  const controller = new AbortController();
  const stop = (reason: StopReason) => controller.signal.aborted || controller.abort(reason);
  const timeout = setTimeout(() => stop({ kind: "timeout" }), deps.runTimeoutMs);
  const renew = setInterval(
    () => {
      // A failed renewal means the run is no longer ours (cancelled, or reaped): stop working on it.
      store.renewLease(run.id, workerId, new Date(now().getTime() + deps.leaseMs)).then(
        (held) => held || stop({ kind: "lease-lost" }),
        (error: unknown) => logger.warn({ err: error, run_id: run.id }, "lease renewal failed"),
      );
    },
    Math.max(10, Math.floor(deps.leaseMs / 3)),
  );
  const executed = trackExecuting(run.organizationId);
  // The execution continues the trace of the request that created the run (its stored traceparent).
  const traced = { kind: SpanKind.CONSUMER, attributes: { "loom.run_id": run.id, "loom.worker": workerId } };
  const done = inSpan("ExecuteRun", traced, contextOf(run.traceparent), async () => {
    let paused = false;
    try {
      paused =
        (await executeRun(run, controller.signal, {
          store,
          log: deps.log,
          model: deps.model,
          tools: deps.tools,
          knowledge: deps.knowledge,
          logger,
          workerId,
          historyWindow: deps.historyWindow,
          now,
        })) === "paused";
    } catch (error) {
      logger.error({ err: error, run_id: run.id }, "run execution failed");
    } finally {
      clearTimeout(timeout);
      clearInterval(renew);
      executed();
      // Kept while the run's turn is still to be appended (`unlockThread`): the sweep appends it, then lets go.
      // Kept by a paused run too: the thread's next run waits for its answer (docs/decisions.md, "Approval of tool calls").
      if (run.threadId && !paused) await store.unlockThread(run.threadId, run.id).catch(() => {});
      finished();
    }
  });
  return { controller, done };
}
