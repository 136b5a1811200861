import { inMemoryLifecycle } from "@loom/kit/in-memory-store";
import { plainCopy } from "@loom/kit/plain-copy";
import { newestFirst } from "@loom/kit/paging";
import { idempotencyWindowMs, type IdempotencyRecord, type QueueEntry, type RunRecord, type RunsStore, type ThreadRecord } from "./port.ts";

interface Lease {
  worker: string;
  until: Date;
  organizationId: string;
  threadId?: string;
}

/**
 * The embedded default and the fast test double; copies in and out like a
 * database. The worker's reads (queue, executing load, expired leases) come
 * from indexes kept up to date on every write, never from a walk over all
 * runs: those grow with history, the indexes only with what is queued or
 * executing.
 */
export function createMemoryRunsStore(): RunsStore {
  const runs = new Map<string, RunRecord>();
  const threads = new Map<string, ThreadRecord>();
  const keys = new Map<string, IdempotencyRecord>();
  const claims = new Set<string>();
  /** Queued runs, oldest first (a Map keeps insertion order; an out-of-order insert re-sorts). */
  let queue = new Map<string, QueueEntry>();
  let newest: QueueEntry | undefined;
  const queuedPerOrganization = new Map<string, number>();
  /** Executing runs: the leases, as MongoDB's run_leases collection. */
  const leases = new Map<string, Lease>();
  const copy = plainCopy;
  const oldestFirst = (a: { createdAt: Date; id?: string; runId?: string }, b: { createdAt: Date; id?: string; runId?: string }) =>
    a.createdAt.getTime() - b.createdAt.getTime() || ((a.id ?? a.runId)! < (b.id ?? b.runId)! ? -1 : 1);
  const ownedThread = (organizationId: string, id: string) => {
    const thread = threads.get(id);
    return thread?.organizationId === organizationId ? thread : undefined;
  };
  const bump = (organizationId: string, by: number) => {
    const n = (queuedPerOrganization.get(organizationId) ?? 0) + by;
    if (n > 0) queuedPerOrganization.set(organizationId, n);
    else queuedPerOrganization.delete(organizationId);
  };
  function enqueue(run: RunRecord) {
    const entry: QueueEntry = { runId: run.id, organizationId: run.organizationId, threadId: run.threadId, createdAt: run.createdAt };
    queue.set(run.id, entry);
    if (newest && queue.has(newest.runId) && oldestFirst(newest, entry) > 0) queue = new Map([...queue.entries()].sort(([, a], [, b]) => oldestFirst(a, b)));
    else newest = entry;
    bump(run.organizationId, 1);
  }
  function dequeue(runId: string) {
    const entry = queue.get(runId);
    if (!entry) return;
    queue.delete(runId);
    bump(entry.organizationId, -1);
  }
  /** Drops records past the window; keys arrive in time order, so the old ones are at the front. */
  function pruneKeys(before: Date) {
    for (const [id, record] of keys) {
      if (record.createdAt >= before) break;
      keys.delete(id);
    }
  }

  return {
    ...inMemoryLifecycle,

    async insertRun(run) {
      if (runs.has(run.id)) return false;
      runs.set(run.id, copy(run));
      if (run.status === "QUEUED") enqueue(run);
      return true;
    },
    async getRun(organizationId, id) {
      const run = runs.get(id);
      return run?.organizationId === organizationId ? copy(run) : undefined;
    },
    getRunById: async (id) => copy(runs.get(id)),
    async listRuns(organizationId, assistantId, statuses, skip, limit) {
      const all = [...runs.values()]
        .filter((r) => r.organizationId === organizationId && r.assistantId === assistantId)
        .filter((r) => statuses.length === 0 || statuses.includes(r.status))
        .sort(newestFirst);
      return { items: copy(all.slice(skip, skip + limit)), totalCount: all.length };
    },
    async transition(id, guard, to, changes, at) {
      const run = runs.get(id);
      if (!run || !guard.from.includes(run.status)) return undefined;
      if (guard.worker !== undefined && run.worker !== guard.worker) return undefined;
      if (guard.leaseExpiredBefore && !(run.leaseUntil && run.leaseUntil < guard.leaseExpiredBefore)) return undefined;
      for (const [field, value] of Object.entries(changes)) {
        // As in MongoDB: a change to undefined removes the field.
        if (value === undefined) delete run[field as keyof typeof changes];
        else Object.assign(run, { [field]: copy(value) });
      }
      if (run.status === "QUEUED" && to !== "QUEUED") dequeue(id);
      Object.assign(run, { status: to, updatedAt: at });
      if ("leaseUntil" in changes) {
        if (run.leaseUntil === undefined) leases.delete(id);
        else leases.set(id, { worker: run.worker ?? "", until: run.leaseUntil, organizationId: run.organizationId, threadId: run.threadId });
      }
      return copy(run);
    },
    async claimRun(id) {
      if (claims.has(id)) return false;
      claims.add(id);
      return true;
    },
    async renewLease(id, worker, leaseUntil) {
      const run = runs.get(id);
      const lease = leases.get(id);
      if (!run || !lease || run.worker !== worker || lease.worker !== worker || (run.status !== "STARTING" && run.status !== "RUNNING")) return false;
      run.leaseUntil = leaseUntil;
      lease.until = leaseUntil;
      return true;
    },
    async queueCandidates(skipOrganizations, skipThreads, limit) {
      const orgs = new Set(skipOrganizations);
      const busy = new Set(skipThreads);
      const found: QueueEntry[] = [];
      for (const entry of queue.values()) {
        if (found.length >= limit) break;
        if (orgs.has(entry.organizationId) || (entry.threadId && busy.has(entry.threadId))) continue;
        found.push(copy(entry));
      }
      return found;
    },
    dropQueueEntry: async (runId) => dequeue(runId),
    releaseClaim: async (runId) => void claims.delete(runId),
    countQueued: async (organizationId) => queuedPerOrganization.get(organizationId) ?? 0,
    async executingLoad() {
      const perOrganization = new Map<string, number>();
      const held = new Set<string>();
      for (const lease of leases.values()) {
        perOrganization.set(lease.organizationId, (perOrganization.get(lease.organizationId) ?? 0) + 1);
        if (lease.threadId) held.add(lease.threadId);
      }
      return { perOrganization, threads: held };
    },
    async expiredLeases(now, limit) {
      const expired: RunRecord[] = [];
      for (const [id, lease] of leases) {
        if (expired.length >= limit) break;
        const run = runs.get(id);
        if (lease.until < now && run && (run.status === "STARTING" || run.status === "RUNNING")) expired.push(copy(run));
      }
      return expired;
    },
    threadHistory: async (threadId, before) =>
      copy([...runs.values()].filter((r) => r.threadId === threadId && r.status === "SUCCEEDED" && r.createdAt < before).sort(oldestFirst)),

    async insertThread(thread) {
      threads.set(thread.id, copy(thread));
    },
    getThread: async (organizationId, id) => copy(ownedThread(organizationId, id)),
    async listThreads(organizationId, alias, skip, limit) {
      const all = [...threads.values()]
        .filter((t) => t.organizationId === organizationId && (alias === undefined || t.alias === alias))
        .sort(newestFirst);
      return { items: copy(all.slice(skip, skip + limit)), totalCount: all.length };
    },
    deleteThread: async (organizationId, id) => ownedThread(organizationId, id) !== undefined && threads.delete(id),
    async lockThread(threadId, runId, staleHolders) {
      const thread = threads.get(threadId);
      if (!thread) return { locked: true };
      const holder = thread.activeRunId;
      if (holder === undefined || holder === runId || staleHolders.includes(holder)) {
        thread.activeRunId = runId;
        return { locked: true };
      }
      return { locked: false, holder };
    },
    async unlockThread(threadId, runId) {
      const thread = threads.get(threadId);
      if (thread?.activeRunId === runId) delete thread.activeRunId;
    },

    async putIdempotency(record) {
      pruneKeys(new Date(record.createdAt.getTime() - idempotencyWindowMs));
      const id = `${record.organizationId}:${record.key}`;
      if (keys.has(id)) return false;
      keys.set(id, copy(record));
      return true;
    },
    async getIdempotency(organizationId, key, createdAfter) {
      const record = keys.get(`${organizationId}:${key}`);
      return record && record.createdAt >= createdAfter ? copy(record) : undefined;
    },
    async deleteIdempotency(organizationId, key, runId) {
      if (keys.get(`${organizationId}:${key}`)?.runId === runId) keys.delete(`${organizationId}:${key}`);
    },
    async takeOverIdempotency(organizationId, key, attempt, at) {
      const record = keys.get(`${organizationId}:${key}`);
      if (!record || record.attempt >= attempt) return false; // one event loop: this check and the write are atomic
      Object.assign(record, { attempt, attemptAt: at });
      return true;
    },
  };
}
