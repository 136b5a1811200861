import type { Page } from "@loom/contracts/paging";

export interface ThreadRecord {
  id: string;
  organizationId: string;
  name: string;
  alias?: string;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
  /** The run that holds the thread while it executes: one run at a time per thread. */
  activeRunId?: string;
}

/** Threads, and the lock by which one run at a time executes in each. */
export interface ThreadStore {
  insertThread(thread: ThreadRecord): Promise<void>;
  getThread(organizationId: string, id: string): Promise<ThreadRecord | undefined>;
  listThreads(
    organizationId: string,
    alias: string | undefined,
    skip: number,
    limit: number,
  ): Promise<Page<ThreadRecord>>;
  deleteThread(organizationId: string, id: string): Promise<boolean>;
  /**
   * Takes a thread for a run: succeeds if it is free, already this run's, or
   * held by a run in `staleHolders` (one that has ended). True also when the
   * thread no longer exists (nothing to serialize against).
   */
  lockThread(threadId: string, runId: string, staleHolders: string[]): Promise<{ locked: boolean; holder?: string }>;
  unlockThread(threadId: string, runId: string): Promise<void>;
}
