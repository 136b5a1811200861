import { InFlight } from "./in-flight.ts";
import { isTerminal, type RunRecord } from "./run-records.ts";
import { idArrays } from "./sqlite-rows.ts";

/** How many finished runs the cache keeps (about a kilobyte each): the oldest goes first. */
const recentlyFinishedLimit = 1_000;

/** A run record no caller shares with another: its arrays and dates copied (callers get records as if read anew). */
export function copyOfRun(run: RunRecord): RunRecord {
  const copy = {
    ...run,
    args: [...run.args],
    createdAt: new Date(run.createdAt.getTime()),
    updatedAt: new Date(run.updatedAt.getTime()),
  };
  for (const [field] of idArrays) copy[field] = [...run[field]];
  if (run.completedAt) copy.completedAt = new Date(run.completedAt.getTime());
  if (run.leaseUntil) copy.leaseUntil = new Date(run.leaseUntil.getTime());
  if (run.pending) copy.pending = structuredClone(run.pending);
  return copy;
}

/**
 * The SQLite runs store's write-through cache: what it holds in memory of its
 * rows. The store is this process's alone (`sharedByProcesses` false) and
 * every write to a run, its lease or the queue passes through it, so a held
 * record is the row.
 *
 * Runs not finished are held: reads of them (the worker's, every poll's)
 * skip the row mapping, and a transition is a guarded UPDATE without
 * RETURNING whose record is built from the held one: ~12% of a run's CPU
 * (docs/benchmarks.md, "the runs in flight held in memory"). The database stays the judge
 * of every guard. A run leaves them when it finishes, and stays among the
 * last `recentlyFinishedLimit` finished ones (a client polls until it sees
 * the end, and that read is the run's last), so memory follows the runs in
 * flight, not history. The queue and the leases are held the same way
 * (`InFlight`, loaded on first use): the worker reads them once a pass, and
 * a pass per run is what low concurrency makes.
 *
 * Writes undone (a failed call's savepoint, a commit that failed) must
 * `forget` everything: a held record never outlives a write that was rolled
 * back; what is needed again is read again.
 */
export class SqliteRunsCache {
  /** Runs not finished, as their rows stand. */
  private readonly unfinished = new Map<string, RunRecord>();
  /** Finished runs, oldest first: terminal, so never written again. */
  private readonly finished = new Map<string, RunRecord>();
  private inFlight: InFlight | undefined;
  private readonly loadInFlight: () => InFlight;

  /** `loadInFlight` reads the queue and the leases from their tables. */
  constructor(loadInFlight: () => InFlight) {
    this.loadInFlight = loadInFlight;
  }

  /** A copy of the run as held, else as `read` finds it in the table (and then held). */
  run(id: string, read: (id: string) => RunRecord | undefined): RunRecord | undefined {
    const kept = this.unfinished.get(id) ?? this.finished.get(id);
    if (kept) return copyOfRun(kept);
    const run = read(id);
    if (run) this.hold(copyOfRun(run));
    return run;
  }

  /** The held record of a run not finished (not a copy: a transition builds the next record from it). */
  unfinishedRun(id: string): RunRecord | undefined {
    return this.unfinished.get(id);
  }

  /** Holds `run` as its row now stands; the cache keeps it (the caller hands over a record nobody else has). */
  hold(run: RunRecord): void {
    if (!isTerminal(run.status)) {
      this.unfinished.set(run.id, run);
      return;
    }
    this.unfinished.delete(run.id);
    if (this.finished.size >= recentlyFinishedLimit) this.finished.delete(this.finished.keys().next().value!);
    this.finished.set(run.id, run);
  }

  /** A renewal of a held run's lease. */
  leaseRenewed(id: string, leaseUntil: Date): void {
    const kept = this.unfinished.get(id);
    if (kept) kept.leaseUntil = new Date(leaseUntil.getTime());
  }

  /** The queue and the leases, loaded from their tables on first use. */
  queueAndLeases(): InFlight {
    return (this.inFlight ??= this.loadInFlight());
  }

  /** The queue and the leases if loaded: a write needs not load them, as a later load reads it from the tables. */
  loadedQueueAndLeases(): InFlight | undefined {
    return this.inFlight;
  }

  /** After writes were undone: everything goes, to be read again when needed. */
  forget(): void {
    this.unfinished.clear();
    this.finished.clear();
    this.inFlight = undefined;
  }
}
