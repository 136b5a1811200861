import { Worker } from "node:worker_threads";

/** What a checkpoint did: frames in the WAL, and how many of them are now in the database file. */
export interface CheckpointResult {
  log: number;
  checkpointed: number;
}

export interface WalCheckpointer {
  /** Runs a checkpoint now (or joins the one running). */
  checkpoint(): Promise<CheckpointResult>;
  close(): Promise<void>;
}

/**
 * Checkpoints a WAL database from a thread of its own, every `everyMs`:
 * SQLite's automatic checkpoint runs inside the COMMIT that crosses 1,000
 * WAL pages, on the event loop, copying pages and syncing the database
 * file there (docs/decisions.md, "The embedded store"). The database's
 * connection on the loop turns that off (`wal_autocheckpoint=0`) and this
 * thread's connection checkpoints instead; a RESTART checkpoint, which
 * waits for the writer, runs only when the WAL has grown past `maxFrames`
 * (a writer that never paused long enough for a passive one to finish).
 */
export function checkpointOffThread(
  file: string,
  options: { everyMs?: number; maxFrames?: number } = {},
): WalCheckpointer {
  const everyMs = options.everyMs ?? 500;
  const maxFrames = options.maxFrames ?? 16_384; // 64 MiB of 4 KiB pages
  const thread = new Worker(new URL("./wal-checkpoint-thread.mjs", import.meta.url), {
    workerData: { file },
    resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 2 },
  });
  thread.unref(); // a database left open does not keep the process alive
  let running: Promise<CheckpointResult> | undefined;
  let last: CheckpointResult = { log: 0, checkpointed: 0 };
  let closed: Promise<void> | undefined;
  const ask = (mode: "passive" | "restart") =>
    new Promise<CheckpointResult>((resolve, reject) => {
      const onError = (error: Error) => reject(error);
      thread.once("error", onError);
      thread.once("message", (result: CheckpointResult | { error: string }) => {
        thread.off("error", onError);
        if ("error" in result) reject(new Error(`WAL checkpoint failed: ${result.error}`));
        else resolve(result);
      });
      thread.postMessage(mode);
    });
  const checkpoint = (): Promise<CheckpointResult> =>
    (running ??= ask(last.log > maxFrames ? "restart" : "passive")
      .then((result) => (last = result))
      .finally(() => (running = undefined)));
  // A failed checkpoint leaves the WAL longer, nothing else: the next one tries again.
  const timer = setInterval(() => void checkpoint().catch(() => {}), everyMs);
  timer.unref();
  return {
    checkpoint,
    // Once: a second close (the handle's, after a failed database stopped the checkpoints) waits for the same end.
    close: () =>
      (closed ??= (async () => {
        clearInterval(timer);
        await running?.catch(() => {});
        const exited = new Promise((resolve) => thread.once("exit", resolve));
        // Held while it closes: a close awaited with nothing else alive (a refused start) would otherwise end
        // the process mid-await (exit code 13, "unsettled top-level await") before the error is printed.
        thread.ref();
        thread.postMessage("close");
        await exited;
      })()),
  };
}
