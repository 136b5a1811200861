import { plainCopy } from "@loom/kit/plain-copy";
import { newestFirst } from "@loom/kit/paging";
import type { IdempotencyRecord, RunRecord, RunsStore, ThreadRecord } from "./port.ts";

/** The embedded default and the fast test double; copies in and out like a database. */
export function createMemoryRunsStore(): RunsStore {
  const runs = new Map<string, RunRecord>();
  const threads = new Map<string, ThreadRecord>();
  const keys = new Map<string, IdempotencyRecord>();
  const claims = new Set<string>();
  const copy = plainCopy;
  const oldestFirst = (a: RunRecord, b: RunRecord) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1);
  const ownedThread = (organizationId: string, id: string) => {
    const thread = threads.get(id);
    return thread?.organizationId === organizationId ? thread : undefined;
  };

  return {
    init: async () => {},
    ready: async () => true,
    close: async () => {},

    async insertRun(run) {
      runs.set(run.id, copy(run));
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
      Object.assign(run, { status: to, updatedAt: at });
      return copy(run);
    },
    async claimRun(id) {
      if (claims.has(id)) return false;
      claims.add(id);
      return true;
    },
    async renewLease(id, worker, leaseUntil) {
      const run = runs.get(id);
      if (!run || run.worker !== worker || (run.status !== "STARTING" && run.status !== "RUNNING")) return false;
      run.leaseUntil = leaseUntil;
      return true;
    },
    queuedRuns: async (limit) => copy([...runs.values()].filter((r) => r.status === "QUEUED").sort(oldestFirst).slice(0, limit)),
    countExecuting: async (organizationId) =>
      [...runs.values()].filter((r) => r.organizationId === organizationId && (r.status === "STARTING" || r.status === "RUNNING")).length,
    expiredLeases: async (now, limit) =>
      copy(
        [...runs.values()]
          .filter((r) => (r.status === "STARTING" || r.status === "RUNNING") && r.leaseUntil !== undefined && r.leaseUntil < now)
          .slice(0, limit),
      ),
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
      const id = `${record.organizationId}:${record.key}`;
      if (keys.has(id)) return false;
      keys.set(id, copy(record));
      return true;
    },
    getIdempotency: async (organizationId, key) => copy(keys.get(`${organizationId}:${key}`)),
    async deleteIdempotency(organizationId, key) {
      keys.delete(`${organizationId}:${key}`);
    },
  };
}
