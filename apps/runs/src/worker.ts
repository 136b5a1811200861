import { randomUUID } from "node:crypto";
import type { Bus, Subscription } from "@loom/bus/bus";
import type { Logger } from "@loom/telemetry/logger";
import { contextOf, inSpan, SpanKind } from "@loom/telemetry/tracing";
import { executeRun, type StopReason } from "./executor.ts";
import type { Model } from "./models/port.ts";
import type { RunLog } from "./run-log.ts";
import { logEnd } from "./run-end.ts";
import type { QueueEntry, RunRecord, RunsStore } from "./store/port.ts";
import { isTerminal } from "./store/port.ts";
import { countTransition, queueWait, trackExecuting } from "./metrics.ts";
import { runSubjects } from "./subjects.ts";

export interface WorkerOptions {
  store: RunsStore;
  log: RunLog;
  model: Model;
  bus: Bus;
  logger: Logger;
  /** How long a claim lasts without renewal; renewed every third of it. */
  leaseMs: number;
  /** How often to look for queued runs when nothing woke the worker. */
  pollMs: number;
  runTimeoutMs: number;
  /** Runs this worker executes at once. */
  concurrency: number;
  /** Runs one organization may have executing at once, across workers. */
  maxRunningPerOrganization: number;
  now?: () => Date;
  workerId?: string;
}

/** A queue entry whose run is still not stored after this long belongs to a create that died. */
const orphanEntryMs = 60_000;

/**
 * How often the worker sweeps (lost workers, unwritten terminal events), or
 * every half lease if that is shorter: a lost run ends within this of its
 * lease running out. A sweep that finds nothing is two small reads.
 */
export const sweepIntervalMs = 1_000;
/** The sweep reads this many runs a read, and ends this many at once. */
const sweepPage = 500;
const sweepParallel = 16;
/** An end younger than this is still being written by whoever ended the run (`logEnd`'s retries): the sweep leaves it. */
const unloggedEndGraceMs = 2_000;

/**
 * Claims queued runs and executes them; several workers (replicas) may share
 * one store: the claim is a guarded update, so each run executes once.
 */
export function createRunWorker(options: WorkerOptions) {
  const { store, bus, logger } = options;
  const now = options.now ?? (() => new Date());
  const workerId = options.workerId ?? `worker-${randomUUID()}`;
  const inFlight = new Map<string, { controller: AbortController; done: Promise<void> }>();
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
  /** What writing a run's terminal event needs (`logEnd`). */
  const ends = { store, log: options.log, logger };

  /**
   * One pass over the queue: reads what is executing (one read of the
   * leases), then the oldest queued runs outside full organizations and busy
   * threads (one read of the queue), chooses (`choose`) and claims them all
   * at once, so a pass costs a few store round trips however many it starts
   * (on SQLite, their writes share one commit).
   */
  async function claimPass(free: number): Promise<RunRecord[]> {
    const seen = queuedMessages;
    const load = await store.executingLoad();
    const full = [...load.perOrganization].filter(([, n]) => n >= options.maxRunningPerOrganization).map(([org]) => org);
    // Every candidate is outside a full organization and a busy thread, so a few per free slot fill it; a
    // shared store claims one per organization a pass, and reads more to find enough organizations.
    const limit = store.sharedByProcesses ? Math.max(50, free * 4) : free * 4;
    const candidates = await store.queueCandidates(full, [...load.threads], limit);
    const chosen = choose(candidates, free, load.perOrganization);
    // Settled one by one: a claim that failed does not take the others (moved to STARTING already) with it.
    const claimed = (await Promise.allSettled(chosen.map(claim))).flatMap((result) => (result.status === "fulfilled" && result.value ? [result.value] : []));
    const drained = full.length === 0 && load.threads.size === 0 && candidates.length < limit && claimed.length === candidates.length;
    if (drained) drainedAt = seen;
    return claimed;
  }

  /**
   * Oldest first, at most one run per thread (its later runs wait for this
   * one anyway) and, per organization, what its cap leaves: all of that on a
   * store of this process alone, one a pass on a shared one. One claim per
   * organization per pass keeps the overshoot of the cap at one run per
   * replica: a replica's next pass sees its own claims in the leases, the
   * others' only then.
   */
  function choose(candidates: QueueEntry[], free: number, executing: Map<string, number>): QueueEntry[] {
    const left = new Map<string, number>();
    const threads = new Set<string>();
    const chosen: QueueEntry[] = [];
    for (const entry of candidates) {
      if (chosen.length >= free || stopped) break;
      const room = left.get(entry.organizationId) ?? (store.sharedByProcesses ? 1 : options.maxRunningPerOrganization - (executing.get(entry.organizationId) ?? 0));
      if (room <= 0 || (entry.threadId && threads.has(entry.threadId))) continue;
      left.set(entry.organizationId, room - 1);
      if (entry.threadId) threads.add(entry.threadId);
      chosen.push(entry);
    }
    return chosen;
  }

  /**
   * Claims one entry and moves its run to STARTING. A store call that fails
   * part-way (a failover, a reset, SQLITE_BUSY) gives back what was taken,
   * so the run, its thread and its organization's slot stay claimable; a
   * move to STARTING that was written although its answer was lost is kept
   * (the run is executed, not left to its lease).
   */
  async function claim(entry: QueueEntry): Promise<RunRecord | undefined> {
    let locked = false;
    let claimed = false;
    try {
      if (entry.threadId && !(locked = await lockThread(entry.threadId, entry.runId))) return undefined;
      const at = now();
      // A claim older than a lease was left by a claimer that failed before it could give it back.
      // Another worker has it (and the thread lock, which names the run, not the worker).
      if (!(claimed = await store.claimRun(entry.runId, workerId, at, new Date(at.getTime() - options.leaseMs)))) return undefined;
      const started = await store.transition(entry.runId, { from: ["QUEUED"] }, "STARTING", { worker: workerId, leaseUntil: new Date(at.getTime() + options.leaseMs) }, at);
      if (started) {
        countTransition("QUEUED", "STARTING");
        queueWait.observe(Math.max(0, at.getTime() - started.createdAt.getTime()) / 1000);
        return started;
      }
      if (entry.threadId) await store.unlockThread(entry.threadId, entry.runId);
      await settleEntry(entry);
      return undefined;
    } catch (error) {
      logger.warn({ err: error, run_id: entry.runId }, "claiming a run failed; giving the claim back");
      return giveBack(entry, locked, claimed);
    }
  }

  /** After a failed claim: the run if its move to STARTING was written after all, else the claim and the thread handed back. */
  async function giveBack(entry: QueueEntry, locked: boolean, claimed: boolean): Promise<RunRecord | undefined> {
    try {
      const run = claimed ? await store.getRunById(entry.runId) : undefined;
      if (run?.status === "STARTING" && run.worker === workerId) {
        countTransition("QUEUED", "STARTING");
        return run;
      }
      if (!claimed) return undefined; // the claim may be another worker's: so is the thread lock, which names the run
      await store.releaseClaim(entry.runId);
      if (locked) await store.unlockThread(entry.threadId!, entry.runId);
    } catch (error) {
      // The store is still failing: the claim expires after a lease; the thread stays locked for this run, the next to start in it anyway.
      logger.warn({ err: error, run_id: entry.runId }, "could not give a failed claim back");
    }
    return undefined;
  }

  /**
   * A claimed entry whose run would not move to STARTING: the run has ended
   * (cancelled while queued) or is not stored yet (its create is between the
   * queue entry and the run, or died there).
   */
  async function settleEntry(entry: QueueEntry): Promise<void> {
    const run = await store.getRunById(entry.runId);
    if (run && run.status !== "QUEUED") return store.dropQueueEntry(entry.runId);
    if (!run && now().getTime() - entry.createdAt.getTime() > orphanEntryMs) return store.dropQueueEntry(entry.runId);
    await store.releaseClaim(entry.runId); // not stored yet: a later pass claims it
  }

  async function lockThread(threadId: string, runId: string): Promise<boolean> {
    const first = await store.lockThread(threadId, runId, []);
    if (first.locked) return true;
    // A holder that has ended (or vanished) without letting go does not block the thread.
    const holder = first.holder ? await store.getRunById(first.holder) : undefined;
    if (holder && !isTerminal(holder.status)) return false;
    return (await store.lockThread(threadId, runId, [first.holder!])).locked;
  }

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
          const runs = await claimPass(options.concurrency - inFlight.size);
          runs.forEach(start);
          if (runs.length === 0) break;
        }
      } while (again && !stopped);
    } catch (error) {
      logger.warn({ err: error }, "claiming runs failed; trying again at the next poll");
    }
  }

  function start(run: RunRecord): void {
    const controller = new AbortController();
    const stop = (reason: StopReason) => controller.signal.aborted || controller.abort(reason);
    const timeout = setTimeout(() => stop({ kind: "timeout" }), options.runTimeoutMs);
    const renew = setInterval(() => {
      // A failed renewal means the run is no longer ours (cancelled, or reaped): stop working on it.
      store.renewLease(run.id, workerId, new Date(now().getTime() + options.leaseMs)).then(
        (held) => held || stop({ kind: "lease-lost" }),
        (error: unknown) => logger.warn({ err: error, run_id: run.id }, "lease renewal failed"),
      );
    }, Math.max(10, Math.floor(options.leaseMs / 3)));
    const executed = trackExecuting(run.organizationId);
    // The execution continues the trace of the request that created the run (its stored traceparent).
    const traced = { kind: SpanKind.CONSUMER, attributes: { "loom.run_id": run.id, "loom.worker": workerId } };
    const done = inSpan("ExecuteRun", traced, contextOf(run.traceparent), async () => {
      try {
        await executeRun(run, controller.signal, { store, log: options.log, model: options.model, logger, workerId, now });
      } catch (error) {
        logger.error({ err: error, run_id: run.id }, "run execution failed");
      } finally {
        clearTimeout(timeout);
        clearInterval(renew);
        executed();
        if (run.threadId) await store.unlockThread(run.threadId, run.id).catch(() => {});
        inFlight.delete(run.id);
        if (drainedAt !== queuedMessages) void pump();
      }
    });
    inFlight.set(run.id, { controller, done });
  }

  /**
   * One sweep: every run whose lease ran out ends ERROR WorkerLost (all of
   * them, page by page), then every ended run whose terminal event is still
   * unwritten gets it. Queued runs that the lost ones held back start at once.
   */
  async function sweep(): Promise<void> {
    await reap();
    await logUnloggedEnds();
  }

  /**
   * Ends runs whose worker stopped renewing: ERROR, WorkerLost. How many it
   * ended. Their statuses first, all of them, then their terminal events:
   * the status frees the organization's place and the thread at once.
   */
  async function reap(): Promise<number> {
    const at = now();
    const seen = new Set<string>();
    const lost: RunRecord[] = [];
    for (;;) {
      // A run whose reaping failed is found again: each is tried once a sweep.
      const expired = (await store.expiredLeases(at, sweepPage)).filter((run) => !seen.has(run.id));
      if (expired.length === 0) break;
      expired.forEach((run) => seen.add(run.id));
      for (const ended of await inBatches(expired, (run) => reapOne(run, at))) if (ended) lost.push(ended);
    }
    if (lost.length > 0) void pump(); // the queued runs the lost ones held back
    const written = await inBatches(lost, (run) => logEnd(run, ends, [])); // once: the sweep's next step or the next sweep tries again
    if (written.includes(false)) logger.warn({ runs: written.filter((ok) => !ok).length }, "could not write lost runs' terminal events; the sweep will");
    return lost.length;
  }

  async function reapOne(run: RunRecord, at: Date): Promise<RunRecord | undefined> {
    try {
      const lost = await store.transition(
        run.id,
        { from: ["STARTING", "RUNNING"], leaseExpiredBefore: at },
        "ERROR",
        { statusDetail: { reason: "WorkerLost", message: "the worker running this run stopped" }, completedAt: at, leaseUntil: undefined },
        at,
      );
      if (!lost) return undefined;
      countTransition(run.status, "ERROR");
      logger.warn({ run_id: run.id, worker: run.worker }, "run's worker was lost");
      if (lost.threadId) await store.unlockThread(lost.threadId, lost.id).catch(() => {}); // a thread whose holder ended is taken over anyway
      return lost;
    } catch (error) {
      logger.warn({ err: error, run_id: run.id }, "reaping a run failed; the next sweep tries again");
      return undefined;
    }
  }

  /** Terminal events that were not written when their runs ended (the events service was unreachable): written now. */
  async function logUnloggedEnds(): Promise<void> {
    const before = new Date(now().getTime() - unloggedEndGraceMs);
    const seen = new Set<string>();
    for (;;) {
      const ended = (await store.unloggedEnds(before, sweepPage)).filter((run) => !seen.has(run.id));
      if (ended.length === 0) return;
      ended.forEach((run) => seen.add(run.id));
      for (let i = 0; i < ended.length; i += sweepParallel) {
        // A batch at a time, to stop at the first that writes nothing rather than try every run against a service that is away.
        const written = await Promise.all(ended.slice(i, i + sweepParallel).map((run) => logEnd(run, ends, [])));
        if (!written.some(Boolean)) {
          logger.warn({ runs: ended.length - i }, "terminal events still unwritten: the events service is unreachable; the next sweep tries again");
          return;
        }
      }
    }
  }

  /** `work` on every item, `sweepParallel` at a time; the results in order. */
  async function inBatches<T, R>(items: T[], work: (item: T) => Promise<R>): Promise<R[]> {
    const results: R[] = [];
    for (let i = 0; i < items.length; i += sweepParallel) results.push(...(await Promise.all(items.slice(i, i + sweepParallel).map(work))));
    return results;
  }

  return {
    workerId,
    start() {
      if (!stopped) return;
      stopped = false;
      subscriptions.push(
        bus.subscribe(runSubjects.queued, () => {
          queuedMessages++;
          void pump();
        }),
      );
      subscriptions.push(
        bus.subscribe(runSubjects.controlAll, (data, subject) => {
          const runId = subject.split(".")[2]!;
          if (new TextDecoder().decode(data) === "cancel") inFlight.get(runId)?.controller.abort({ kind: "cancelled" } satisfies StopReason);
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
      // At once too: a replica started after a crash ends the lost runs without waiting for the first interval.
      sweepNow();
      void pump();
    },
    /** Stops claiming and waits for the runs in flight (a replica's graceful shutdown). */
    async stop(graceMs = 20_000) {
      stopped = true;
      subscriptions.splice(0).forEach((s) => s.unsubscribe());
      timers.splice(0).forEach((t) => clearInterval(t));
      await claiming;
      const all = Promise.all([...inFlight.values()].map((f) => f.done));
      await Promise.race([all, new Promise((resolve) => setTimeout(resolve, graceMs).unref())]);
    },
    /** Drops everything at once, as a crashed process would (tests of lease expiry). */
    crash() {
      stopped = true;
      subscriptions.splice(0).forEach((s) => s.unsubscribe());
      timers.splice(0).forEach((t) => clearInterval(t));
      for (const { controller } of inFlight.values()) controller.abort({ kind: "lease-lost" } satisfies StopReason);
    },
    inFlight: () => inFlight.size,
  };
}

export type RunWorker = ReturnType<typeof createRunWorker>;
