import type { Logger } from "@loom/telemetry/logger";
import { denyAtDeadline } from "../approvals/deadline.ts";
import { settlePaused } from "../approvals/notes.ts";
import { countTransition } from "../metrics.ts";
import { logEnd } from "../run-end.ts";
import type { RunLog } from "../run-log.ts";
import type { RunQueue } from "../store/run-queue.ts";
import type { RunRecord, RunRecordStore } from "../store/run-records.ts";
import type { ThreadStore } from "../store/threads.ts";

/** The sweep reads this many runs a read, and ends this many at once. */
const sweepPage = 500;
const sweepParallel = 16;
/**
 * An end younger than this is still being written by whoever ended the run
 * (`logEnd`'s retries), and a paused run's mark by whoever moved it: the sweep leaves them.
 */
const writerGraceMs = 2_000;

export interface SweepDeps {
  store: RunRecordStore & RunQueue & ThreadStore;
  log: RunLog;
  logger: Logger;
  now: () => Date;
  /** Runs were found lost (the queued runs they held back may start), or paused runs re-queued. */
  lostFound(): void;
}

/**
 * The worker's sweep: every run whose lease ran out ends ERROR WorkerLost
 * (all of them, page by page), then every ended run whose terminal event is
 * still unwritten gets it (and, first, its turn on its thread if that is still
 * to be appended), then every paused run whose last move a crash cut short
 * is settled, then every run paused for approval past its deadline
 * resumes with its undecided calls denied. Any replica's sweep ends any replica's runs.
 */
export function createSweep(deps: SweepDeps): () => Promise<void> {
  const { store, logger, now } = deps;
  /** What writing a run's terminal event needs (`logEnd`). */
  const ends = { store, log: deps.log, logger };

  /**
   * Ends runs whose worker stopped renewing: ERROR, WorkerLost. Their
   * statuses first, all of them, then their terminal events: the status
   * frees the organization's place and the thread at once.
   */
  async function reap(): Promise<void> {
    const seen = new Set<string>();
    const lost: RunRecord[] = [];
    for (;;) {
      // The time is read again each page: leases that ran out while the last page was ended are ended now too,
      // before the terminal events, rather than a sweep later. A run whose reaping failed is found again: each is
      // tried once a sweep.
      const at = now();
      const expired = (await store.expiredLeases(at, sweepPage)).filter((run) => !seen.has(run.id));
      if (expired.length === 0) break;
      expired.forEach((run) => seen.add(run.id));
      for (const ended of await inBatches(expired, (run) => reapOne(run, at))) if (ended) lost.push(ended);
    }
    if (lost.length > 0) deps.lostFound();
    const written = await inBatches(lost, (run) => logEnd(run, ends, [])); // once: the sweep's next step or the next sweep tries again
    if (written.includes(false))
      logger.warn(
        { runs: written.filter((ok) => !ok).length },
        "could not write lost runs' terminal events; the sweep will",
      );
  }

  async function reapOne(run: RunRecord, at: Date): Promise<RunRecord | undefined> {
    try {
      const lost = await store.transition(
        run.id,
        { from: ["STARTING", "RUNNING"], leaseExpiredBefore: at },
        "ERROR",
        {
          statusDetail: { reason: "WorkerLost", message: "the worker running this run stopped" },
          completedAt: at,
          leaseUntil: undefined,
          ...(run.pending ? { pending: undefined } : {}),
        },
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
    const before = new Date(now().getTime() - writerGraceMs);
    const seen = new Set<string>();
    for (;;) {
      const ended = (await store.unloggedEnds(before, sweepPage)).filter((run) => !seen.has(run.id));
      if (ended.length === 0) return;
      ended.forEach((run) => seen.add(run.id));
      for (let i = 0; i < ended.length; i += sweepParallel) {
        // A batch at a time, to stop at the first that writes nothing rather than try every run against a service that is away.
        const written = await Promise.all(ended.slice(i, i + sweepParallel).map(completeEnd));
        if (!written.some(Boolean)) {
          logger.warn(
            { runs: ended.length - i },
            "terminal events still unwritten: the events service is unreachable; the next sweep tries again",
          );
          return;
        }
      }
    }
  }

  /**
   * An ended run's unfinished business, in order: its turn appended to its
   * thread if still marked (MongoDB, after a crash or a failed append), the
   * thread then let go, and its terminal event written (the message is
   * listed before the event arrives).
   */
  async function completeEnd(run: RunRecord): Promise<boolean> {
    if (run.threadMessage) {
      try {
        await store.appendRunMessage(run);
      } catch (error) {
        logger.warn(
          { err: error, run_id: run.id },
          "appending a run's message to its thread failed; the next sweep tries again",
        );
        return false;
      }
      if (run.threadId) await store.unlockThread(run.threadId, run.id).catch(() => {});
    }
    return logEnd(run, ends, []);
  }

  /**
   * Paused runs whose last move (a pause, a decision) a crash cut short:
   * their events written, and those with every call decided put back in
   * the queue at once, not at their deadline.
   */
  async function settleApprovals(): Promise<void> {
    const due = await store.unsettledApprovals(new Date(now().getTime() - writerGraceMs), sweepPage);
    const requeued = await inBatches(due, async (run) => {
      try {
        return run.pending ? await settlePaused(deps, { ...run, pending: run.pending }, now()) : false;
      } catch (error) {
        logger.warn({ err: error, run_id: run.id }, "settling a paused run failed; the next sweep tries again");
        return false;
      }
    });
    if (requeued.includes(true)) deps.lostFound();
  }

  /** Runs paused for approval past their deadline: their undecided calls denied, the runs back in the queue. */
  async function expireApprovals(): Promise<void> {
    const at = now();
    const due = await store.expiredApprovals(at, sweepPage);
    const requeued = await inBatches(due, async (run) => {
      try {
        return run.pending ? await denyAtDeadline(deps, { ...run, pending: run.pending }, at) : false;
      } catch (error) {
        logger.warn(
          { err: error, run_id: run.id },
          "denying a run's calls at its deadline failed; the next sweep tries again",
        );
        return false;
      }
    });
    if (requeued.includes(true)) deps.lostFound(); // this worker looks at the queue now
  }

  return async function sweep(): Promise<void> {
    await reap();
    await logUnloggedEnds();
    await settleApprovals();
    await expireApprovals();
  };
}

/** `work` on every item, `sweepParallel` at a time; the results in order. */
async function inBatches<T, R>(items: T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += sweepParallel)
    results.push(...(await Promise.all(items.slice(i, i + sweepParallel).map(work))));
  return results;
}
