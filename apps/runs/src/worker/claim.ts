import type { Logger } from "@loom/telemetry/logger";
import { countTransition, queueWait } from "../metrics.ts";
import type { QueueEntry, RunQueue } from "../store/run-queue.ts";
import { isTerminal, type RunRecord, type RunRecordStore } from "../store/run-records.ts";
import type { ThreadStore } from "../store/threads.ts";

/** A queue entry whose run is still not stored after this long belongs to a create that died. */
const orphanEntryMs = 60_000;

export interface ClaimDeps {
  store: RunRecordStore & RunQueue & ThreadStore;
  logger: Logger;
  workerId: string;
  /** How long a claim lasts without renewal. */
  leaseMs: number;
  now: () => Date;
}

/**
 * How this worker claims one queue entry and moves its run to STARTING
 * (undefined when it cannot). A store call that fails part-way (a failover,
 * a reset, SQLITE_BUSY) gives back what was taken, so the run, its thread
 * and its organization's slot stay claimable; a move to STARTING that was
 * written although its answer was lost is kept (the run is executed, not
 * left to its lease).
 */
export function createClaim(deps: ClaimDeps): (entry: QueueEntry) => Promise<RunRecord | undefined> {
  const { store, logger, workerId, now } = deps;

  async function claim(entry: QueueEntry): Promise<RunRecord | undefined> {
    let locked = false;
    let claimed = false;
    try {
      if (entry.threadId && !(locked = await lockThread(entry.threadId, entry.runId))) return undefined;
      const at = now();
      // A claim older than a lease was left by a claimer that failed before it could give it back.
      // Another worker has it (and the thread lock, which names the run, not the worker).
      if (!(claimed = await store.claimRun(entry.runId, workerId, at, new Date(at.getTime() - deps.leaseMs))))
        return undefined;
      const started = await store.transition(
        entry.runId,
        { from: ["QUEUED"] },
        "STARTING",
        { worker: workerId, leaseUntil: new Date(at.getTime() + deps.leaseMs) },
        at,
      );
      if (started) {
        countTransition("QUEUED", "STARTING");
        queueWait.observe(Math.max(0, at.getTime() - started.createdAt.getTime()) / 1000);
        return started;
      }
      const resumed = await settleEntry(entry);
      if (resumed) return resumed;
      if (entry.threadId) await store.unlockThread(entry.threadId, entry.runId);
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
  async function settleEntry(entry: QueueEntry): Promise<RunRecord | undefined> {
    const run = await store.getRunById(entry.runId);
    if (run?.status === "RUNNING" && run.pending && !run.worker) return resume(run);
    if (run && run.status !== "QUEUED") await store.dropQueueEntry(entry.runId);
    else if (!run && now().getTime() - entry.createdAt.getTime() > orphanEntryMs)
      await store.dropQueueEntry(entry.runId);
    else await store.releaseClaim(entry.runId); // not stored yet: a later pass claims it
    return undefined;
  }

  /**
   * A paused run whose calls were all decided, put back in the queue
   * (docs/decisions.md, "Approval of tool calls"): taken up by this worker,
   * still RUNNING, its status detail cleared; the executor goes on from its
   * `pending`. Its thread is still its own (a paused run keeps it).
   */
  async function resume(run: RunRecord): Promise<RunRecord | undefined> {
    const at = now();
    const resumed = await store.transition(
      run.id,
      { from: ["RUNNING"], unheld: true },
      "RUNNING",
      { worker: workerId, leaseUntil: new Date(at.getTime() + deps.leaseMs), statusDetail: undefined },
      at,
    );
    if (!resumed) await store.dropQueueEntry(run.id); // taken up or ended meanwhile
    return resumed;
  }

  /**
   * Takes the run's thread; a holder that has ended (or vanished) without
   * letting go does not block it, unless its turn is still to be appended
   * to the thread (the sweep appends it): the next run must see it.
   */
  async function lockThread(threadId: string, runId: string): Promise<boolean> {
    const first = await store.lockThread(threadId, runId, []);
    if (first.locked) return true;
    const holder = first.holder ? await store.getRunById(first.holder) : undefined;
    if (holder && (!isTerminal(holder.status) || holder.threadMessage)) return false;
    return (await store.lockThread(threadId, runId, [first.holder!])).locked;
  }

  return claim;
}
