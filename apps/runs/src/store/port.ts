import type { StoreLifecycle } from "@loom/store/open";
import type { IdempotencyStore } from "./idempotency.ts";
import type { MessageStore } from "./messages.ts";
import type { RunQueue } from "./run-queue.ts";
import type { RunRecordStore } from "./run-records.ts";
import type { ThreadStore } from "./threads.ts";

/**
 * The runs service's whole store, as its adapters (MongoDB, SQLite) implement
 * it: one database holds the five parts, so a run's move and its queue entry
 * or lease change together. Code that uses one part takes that part's port
 * (`RunRecordStore`, `RunQueue`, `ThreadStore`, `MessageStore`, `IdempotencyStore`).
 */
export interface RunsStore
  extends StoreLifecycle,
    RunRecordStore,
    RunQueue,
    ThreadStore,
    MessageStore,
    IdempotencyStore {
  /**
   * Resolves once every write made so far is on disk. The store's calls may
   * resolve before (on SQLite they do: the worker's steps do not wait for
   * the disk); the service awaits this before it answers, so whatever a
   * caller is told survives a crash. On MongoDB every write is acknowledged
   * by the server already.
   */
  durable(): Promise<void>;
}
