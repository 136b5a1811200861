import { randomUUID } from "node:crypto";
import type { Bus, Subscription } from "@loom/bus/bus";
import type { Logger } from "@loom/telemetry/logger";
import type { AgentLoopSettings } from "./agent-loop.ts";
import type { ExecuteDeps, StopReason } from "./executor.ts";
import type { HistoryWindow } from "./history.ts";
import type { Model } from "./models/port.ts";
import type { RunLog } from "./run-log.ts";
import type { MessageStore } from "./store/messages.ts";
import type { RunQueue } from "./store/run-queue.ts";
import type { RunRecord, RunRecordStore } from "./store/run-records.ts";
import type { ThreadStore } from "./store/threads.ts";
import { runSubjects } from "./subjects.ts";
import { createClaim } from "./worker/claim.ts";
import { claimPass } from "./worker/claim-pass.ts";
import { type Execution, startExecution } from "./worker/execution.ts";
import { createSweep } from "./worker/sweep.ts";

export interface WorkerOptions {
  store: RunRecordStore & RunQueue & ThreadStore & MessageStore;
  log: RunLog;
  model: Model;
  /** The tools service and the agent loop's bounds; absent, runs go without their tools. */
  tools?: AgentLoopSettings;
  /** The knowledge service's queries; absent, runs go without their knowledge bases. */
  knowledge?: ExecuteDeps["knowledge"];
  bus: Bus;
  logger: Logger;
  /** How long a claim lasts without renewal; renewed every third of it. */
  leaseMs: number;
  /** How often to look for queued runs when nothing woke the worker. */
  pollMs: number;
  runTimeoutMs: number;
  /** How much of its thread a run sees. */
  historyWindow: HistoryWindow;
  /** Runs this worker executes at once. */
  concurrency: number;
  /** Runs one organization may have executing at once, across workers. */
  maxRunningPerOrganization: number;
  now?: () => Date;
  workerId?: string;
}

/**
 * How often the worker sweeps (lost workers, unwritten terminal events), or
 * every half lease if that is shorter: a lost run ends within this of its
 * lease running out. A sweep that finds nothing is four small reads.
 */
export const sweepIntervalMs = 1_000;

/**
 * Claims queued runs and executes them; several workers (replicas) may share
 * one store: the claim is a guarded update, so each run executes once. Woken
 * by the bus's "queued" messages, by a run ending here and by a poll; sweeps
 * for lost runs and unwritten ends on a timer.
 */
export function createRunWorker(options: WorkerOptions) {
  const { store, bus, logger } = options;
  const now = options.now ?? (() => new Date());
  const workerId = options.workerId ?? `worker-${randomUUID()}`;
  const inFlight = new Map<string, Execution>();
  const subscriptions: Subscription[] = [];
  const timers: NodeJS.Timeout[] = [];
  let stopped = true;
  let claiming: Promise<void> | undefined;
  let again = false;
  /**
   * How many "queued" messages have arrived, and how many had when a pass
   * last found the queue drained (everything it read claimed, nothing held
   * back by a cap or a busy thread). While the two are equal, a run ending
   * here has nothing to start: its pass is skipped (a third of the worker's
   * reads under load). The poll still passes, for messages the bus lost.
   */
  let queuedMessages = 0;
  let drainedAt = -1;

  const claim = createClaim({ store, logger, workerId, leaseMs: options.leaseMs, now });
  const passDeps = {
    store,
    maxRunningPerOrganization: options.maxRunningPerOrganization,
    claim,
    stopped: () => stopped,
  };
  const executionDeps = {
    store,
    log: options.log,
    model: options.model,
    tools: options.tools,
    knowledge: options.knowledge,
    logger,
    workerId,
    leaseMs: options.leaseMs,
    runTimeoutMs: options.runTimeoutMs,
    historyWindow: options.historyWindow,
    now,
  };
  const sweep = createSweep({ store, log: options.log, logger, now, lostFound: () => void pump() });

  /** Claims while there is capacity; one pass at a time, another if woken meanwhile. */
  function pump(): Promise<void> {
    if (stopped) return Promise.resolve();
    if (claiming) {
      again = true;
      return claiming;
    }
    // Cleared in a callback of its own: when there is nothing to claim the
    // pass ends without awaiting, and an in-body `finally` would clear
    // `claiming` before it is assigned, leaving a settled promise there that
    // turns every later pump away (the worker then never claims again).
    claiming = claimWhileFree().finally(() => {
      claiming = undefined;
    });
    return claiming;
  }

  async function claimWhileFree(): Promise<void> {
    try {
      do {
        again = false;
        while (!stopped && inFlight.size < options.concurrency) {
          const seen = queuedMessages;
          const { claimed, drained } = await claimPass(passDeps, options.concurrency - inFlight.size);
          if (drained) drainedAt = seen;
          claimed.forEach(execute);
          if (claimed.length === 0) break;
        }
      } while (again && !stopped);
    } catch (error) {
      logger.warn({ err: error }, "claiming runs failed; trying again at the next poll");
    }
  }

  function execute(run: RunRecord): void {
    const execution = startExecution(run, executionDeps, () => {
      inFlight.delete(run.id);
      if (drainedAt !== queuedMessages) void pump();
    });
    inFlight.set(run.id, execution);
  }

  /** Listens for "queued" and cancel messages, polls, sweeps (at once too: a replica started after a crash ends the lost runs without waiting). */
  function listen(): void {
    subscriptions.push(
      bus.subscribe(runSubjects.queued, () => {
        queuedMessages++;
        void pump();
      }),
    );
    subscriptions.push(
      bus.subscribe(runSubjects.controlAll, (data, subject) => {
        const runId = subject.split(".")[2]!;
        if (new TextDecoder().decode(data) === "cancel")
          inFlight.get(runId)?.controller.abort({ kind: "cancelled" } satisfies StopReason);
      }),
    );
    timers.push(setInterval(() => void pump(), options.pollMs));
    let sweeping = false;
    const sweepNow = () => {
      if (sweeping) return; // a slow sweep is not overlapped by the next
      sweeping = true;
      void sweep()
        .catch((error: unknown) => logger.warn({ err: error }, "sweeping failed"))
        .finally(() => (sweeping = false));
    };
    timers.push(setInterval(sweepNow, Math.max(10, Math.min(sweepIntervalMs, Math.floor(options.leaseMs / 2)))));
    sweepNow();
  }

  function stopListening(): void {
    stopped = true;
    subscriptions.splice(0).forEach((s) => s.unsubscribe());
    timers.splice(0).forEach((t) => clearInterval(t));
  }

  return {
    workerId,
    start() {
      if (!stopped) return;
      stopped = false;
      listen();
      void pump();
    },
    /** Stops claiming and waits for the runs in flight (a replica's graceful shutdown). */
    async stop(graceMs = 20_000) {
      stopListening();
      await claiming;
      const all = Promise.all([...inFlight.values()].map((f) => f.done));
      await Promise.race([all, new Promise((resolve) => setTimeout(resolve, graceMs).unref())]);
    },
    /** Drops everything at once, as a crashed process would (tests of lease expiry). */
    crash() {
      stopListening();
      for (const { controller } of inFlight.values()) controller.abort({ kind: "lease-lost" } satisfies StopReason);
    },
    inFlight: () => inFlight.size,
  };
}

export type RunWorker = ReturnType<typeof createRunWorker>;
