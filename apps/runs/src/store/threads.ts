import type { JsonObject } from "@bufbuild/protobuf";
import type { Page } from "@loom/contracts/paging";
import type { NewMessage } from "./messages.ts";

export interface ThreadRecord {
  id: string;
  organizationId: string;
  name: string;
  alias?: string;
  /** Always an object (`{}` when none was given). */
  metadata: JsonObject;
  /** How many messages the thread has, and the characters of their `input` and `output`, as its messages stand. */
  messageCount: number;
  messagesLength: number;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
  /** The run that holds the thread while it executes: one run at a time per thread. */
  activeRunId?: string;
}

/** A thread to store: its counts follow from its first messages. */
export type NewThread = Omit<ThreadRecord, "messageCount" | "messagesLength">;

/** What UpdateThread may change; absent fields stay. */
export type ThreadChanges = Partial<Pick<ThreadRecord, "name" | "alias" | "metadata">> & { updatedAt: Date };

/** ListThreads' filters; each absent one lets every thread through. */
export interface ThreadFilter {
  alias?: string;
  /** The name starts with this (case-sensitive). */
  startsWith?: string;
  createdBy?: string;
}

/** Threads, and the lock by which one run at a time executes in each. */
export interface ThreadStore {
  /** Stores a thread with its first messages, in order (indexes 0..n-1). */
  insertThread(thread: NewThread, messages: NewMessage[]): Promise<ThreadRecord>;
  getThread(organizationId: string, id: string): Promise<ThreadRecord | undefined>;
  /** Whether the organization has the thread: for a run attached to it (no counts read). */
  hasThread(organizationId: string, id: string): Promise<boolean>;
  /**
   * Changes the thread's fields; with `messages`, REPLACES its messages by
   * these (indexes 0..n-1): a reader sees the old ones or the new ones, never
   * a mix. Undefined when the thread is not the organization's.
   */
  updateThread(
    organizationId: string,
    id: string,
    changes: ThreadChanges,
    messages?: NewMessage[],
  ): Promise<ThreadRecord | undefined>;
  listThreads(organizationId: string, filter: ThreadFilter, skip: number, limit: number): Promise<Page<ThreadRecord>>;
  /** Deletes the thread and its messages (its runs stay). */
  deleteThread(organizationId: string, id: string): Promise<boolean>;
  /**
   * Takes a thread for a run: succeeds if it is free, already this run's, or
   * held by a run in `staleHolders` (one that has ended). True also when the
   * thread no longer exists (nothing to serialize against).
   */
  lockThread(threadId: string, runId: string, staleHolders: string[]): Promise<{ locked: boolean; holder?: string }>;
  /** Lets the thread go, unless the run still has its message to append (MongoDB: `RunRecord.threadMessage`). */
  unlockThread(threadId: string, runId: string): Promise<void>;
}
