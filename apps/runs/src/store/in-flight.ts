import type { ExecutingLoad, QueueEntry } from "./run-queue.ts";

/** Queue order, as the SQL's `ORDER BY created_at, run_id` (ids are ASCII, so string order is byte order). */
function before(a: QueueEntry, b: QueueEntry): boolean {
  const at = a.createdAt.getTime() - b.createdAt.getTime();
  return at < 0 || (at === 0 && a.runId < b.runId);
}

const copyOf = (entry: QueueEntry): QueueEntry => ({ ...entry, createdAt: new Date(entry.createdAt.getTime()) });

/**
 * What the SQLite runs store holds in memory of its `runs_queue` and
 * `runs_leases` tables: the queued runs in queue order, and the executing
 * runs' organizations and threads. The store writes through (every write to
 * either table passes here), so the worker's pass — a read of each, one per
 * run at low concurrency — costs no statement. Loaded from the tables on
 * first use; the store drops it when writes are undone and loads it again.
 */
export class InFlight {
  private readonly queue: QueueEntry[] = [];
  private readonly queuedById = new Map<string, QueueEntry>();
  private readonly queuedPerOrganization = new Map<string, number>();
  private readonly leases = new Map<string, { organizationId: string; threadId?: string }>();

  /** `queue` in queue order, as the tables hold them now. */
  constructor(queue: QueueEntry[], leases: Array<{ runId: string; organizationId: string; threadId?: string }>) {
    for (const entry of queue) this.enqueue(entry);
    for (const { runId, ...lease } of leases) this.leases.set(runId, lease);
  }

  /** Where `entry` stands in the queue, or would (a binary search: runs mostly arrive in order, so mostly the end). */
  private positionOf(entry: QueueEntry): number {
    let low = 0;
    let high = this.queue.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (before(this.queue[middle]!, entry)) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  enqueue(entry: QueueEntry): void {
    if (this.queuedById.has(entry.runId)) return;
    const kept = copyOf(entry);
    this.queue.splice(this.positionOf(kept), 0, kept);
    this.queuedById.set(kept.runId, kept);
    this.queuedPerOrganization.set(kept.organizationId, (this.queuedPerOrganization.get(kept.organizationId) ?? 0) + 1);
  }

  dequeue(runId: string): void {
    const entry = this.queuedById.get(runId);
    if (!entry) return;
    this.queue.splice(this.positionOf(entry), 1);
    this.queuedById.delete(runId);
    const left = this.queuedPerOrganization.get(entry.organizationId)! - 1;
    if (left === 0) this.queuedPerOrganization.delete(entry.organizationId);
    else this.queuedPerOrganization.set(entry.organizationId, left);
  }

  /** The oldest `limit` queued runs outside `skipOrganizations` and `skipThreads`. */
  candidates(skipOrganizations: string[], skipThreads: string[], limit: number): QueueEntry[] {
    const organizations = new Set(skipOrganizations);
    const threads = new Set(skipThreads);
    const found: QueueEntry[] = [];
    for (const entry of this.queue) {
      if (found.length >= limit) break;
      if (organizations.has(entry.organizationId) || (entry.threadId !== undefined && threads.has(entry.threadId)))
        continue;
      found.push(copyOf(entry));
    }
    return found;
  }

  isQueued(runId: string): boolean {
    return this.queuedById.has(runId);
  }

  countQueued(organizationId: string): number {
    return this.queuedPerOrganization.get(organizationId) ?? 0;
  }

  /** A lease taken; one standing keeps its organization and thread, as the table's upsert does. */
  lease(runId: string, organizationId: string, threadId: string | undefined): void {
    if (this.leases.has(runId)) return;
    this.leases.set(runId, threadId === undefined ? { organizationId } : { organizationId, threadId });
  }

  unlease(runId: string): void {
    this.leases.delete(runId);
  }

  executingLoad(): ExecutingLoad {
    const perOrganization = new Map<string, number>();
    const threads = new Set<string>();
    for (const { organizationId, threadId } of this.leases.values()) {
      perOrganization.set(organizationId, (perOrganization.get(organizationId) ?? 0) + 1);
      if (threadId !== undefined) threads.add(threadId);
    }
    return { perOrganization, threads };
  }
}
