import { isDeepStrictEqual } from "node:util";
import type { RunLog } from "../run-log.ts";
import { type PendingApproval, type SystemNote, undecided } from "../store/pending-approval.ts";
import type { RunQueue } from "../store/run-queue.ts";
import type { RunRecord, RunRecordStore } from "../store/run-records.ts";

/**
 * Writes a paused run's SYSTEM events still marked unlogged in its
 * `pending` (docs/decisions.md, "Approval of tool calls"), then clears them
 * with a move guarded on the pending approval as read. The notes from
 * `ownFrom` on were made by the caller's own move, so cannot be in the log
 * yet; those before may be, at its end (written by a writer that crashed
 * before clearing them), and are not written again: a note goes in once,
 * and in order. The run after the clear; undefined when it changed
 * meanwhile (its next mover writes what is left).
 */
export async function logUnloggedNotes(
  deps: { store: RunRecordStore; log: RunLog },
  run: RunRecord & { pending: PendingApproval },
  at: Date,
  ownFrom = run.pending.unlogged?.length ?? 0,
): Promise<RunRecord | undefined> {
  if (!run.pending.unlogged?.length) return run;
  const missing = await notesToWrite(deps.log, run, ownFrom);
  if (missing.length > 0) await deps.log.system(run, missing);
  const { unlogged: _, ...logged } = run.pending;
  return deps.store.transition(
    run.id,
    { from: ["RUNNING"], unheld: true, pending: run.pending },
    "RUNNING",
    { pending: logged },
    at,
  );
}

/** A paused or resumed run's unlogged notes less those its log already ends with (the first `ownFrom` may be there). */
export async function notesToWrite(
  log: RunLog,
  run: RunRecord & { pending: PendingApproval },
  ownFrom = run.pending.unlogged?.length ?? 0,
): Promise<SystemNote[]> {
  const notes = run.pending.unlogged ?? [];
  const inherited = notes.slice(0, ownFrom);
  const missing = inherited.length > 0 ? notesNotInLog(inherited, await log.tail(run, inherited.length)) : [];
  return [...missing, ...notes.slice(ownFrom)];
}

/**
 * The notes still to write: those after the longest run of them that the
 * log already ends with (a batch is appended whole, so what a writer got in
 * is always the notes' first ones).
 */
export function notesNotInLog(notes: SystemNote[], tail: Array<{ type: string; payload: unknown }>): SystemNote[] {
  for (let written = Math.min(notes.length, tail.length); written > 0; written--) {
    const end = tail.slice(tail.length - written);
    if (end.every((event, i) => event.type === notes[i]!.type && isDeepStrictEqual(event.payload, notes[i]!.payload)))
      return notes.slice(written);
  }
  return notes;
}

/**
 * Finishes what a paused run's last move left undone (docs/decisions.md,
 * "Approval of tool calls"): its unlogged notes written, then, every call
 * decided, the run put back in the queue. True when it was re-queued; false
 * when it still awaits a decision or changed meanwhile.
 */
export async function settlePaused(
  deps: { store: RunRecordStore & RunQueue; log: RunLog },
  run: RunRecord & { pending: PendingApproval },
  at: Date,
): Promise<boolean> {
  const logged = await logUnloggedNotes(deps, run, at);
  if (!logged?.pending || undecided(logged.pending).length > 0) return false;
  await deps.store.requeuePaused(logged, at);
  return true;
}
