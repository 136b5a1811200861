import { type FileHandle, open } from "node:fs/promises";

/**
 * Makes a SQLite WAL durable off the event loop: `synced()` resolves once an
 * fdatasync of the WAL file, started after the call, has finished. The sync
 * runs on libuv's thread pool, so the process keeps working while the disk
 * flushes; callers that arrive while one is running share the next one
 * (group commit of the fsyncs themselves). fdatasync flushes the file's
 * data whichever descriptor wrote it, so SQLite's writes are covered.
 * Once a sync has failed, every later one fails with the same error: Linux
 * reports a writeback error once and may have dropped the pages it could not
 * write, so a later fdatasync that succeeds proves nothing.
 */
export interface WalSync {
  synced(): Promise<void>;
  close(): Promise<void>;
}

export function walSync(walFile: string): WalSync {
  let file: Promise<FileHandle> | undefined;
  let running: Promise<void> | undefined;
  let queued: Promise<void> | undefined;
  let failed: { error: unknown } | undefined;

  const start = (): Promise<void> => {
    const run = (async () => {
      if (failed) throw failed.error;
      file ??= open(walFile, "r");
      try {
        await (await file).datasync();
      } catch (error) {
        failed ??= { error };
        throw error;
      }
    })().finally(() => {
      if (running === run) running = undefined;
    });
    running = run;
    return run;
  };

  return {
    synced() {
      if (queued) return queued; // starts after the running one: it covers this caller's writes too
      if (!running) return start();
      // The running sync may have begun before this caller's writes: wait for the next one.
      const next = running
        .catch(() => {})
        .then(() => {
          queued = undefined;
          return start();
        });
      queued = next;
      return next;
    },
    async close() {
      await Promise.allSettled([running, queued]);
      await (await file?.catch(() => undefined))?.close();
      file = undefined;
    },
  };
}
