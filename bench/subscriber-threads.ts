import { Worker } from "node:worker_threads";
import type { SubscribersInput, SubscribersMessage } from "./sse-subscribers.ts";

/** One subscribers' thread, started and awaited until its streams are open. */
async function startSubscribersThread(input: SubscribersInput) {
  const worker = new Worker(new URL("./sse-subscribers.ts", import.meta.url), { workerData: input });
  const messages: SubscribersMessage[] = [];
  let wake: (() => void) | undefined;
  worker.on("message", (m: SubscribersMessage) => (messages.push(m), wake?.()));
  worker.on("error", (error) => (messages.push({ kind: "failed", message: error.message }), wake?.()));
  const nextMessage = async (): Promise<SubscribersMessage> => {
    while (messages.length === 0) await new Promise<void>((r) => (wake = r));
    return messages.shift()!;
  };
  const first = await nextMessage();
  if (first.kind !== "connected") {
    await worker.terminate();
    throw new Error(first.kind === "failed" ? first.message : "the subscribers did not connect");
  }
  return {
    /** What arrived, once every stream ended or after `timeoutMs`. */
    async results(timeoutMs: number) {
      const timer = setTimeout(() => worker.postMessage("stop"), timeoutMs);
      const last = await nextMessage();
      clearTimeout(timer);
      await worker.terminate();
      if (last.kind !== "done") throw new Error(last.kind === "failed" ? last.message : "no results");
      return last;
    },
  };
}

/**
 * `subscribers` streams spread over `threads` threads of their own, so that
 * reading a million frames a second neither holds up the appender's clock
 * nor waits behind one thread's queue of a thousand sockets.
 */
export async function startSubscribers(
  url: string,
  headers: Record<string, string>,
  subscribers: number,
  threads: number,
  firstOffset?: number,
) {
  const share = (t: number) => Math.floor(subscribers / threads) + (t < subscribers % threads ? 1 : 0);
  const starts = await Promise.allSettled(
    Array.from({ length: Math.min(threads, subscribers) }, (_, t) =>
      startSubscribersThread({
        url,
        headers,
        subscribers: share(t),
        ...(firstOffset !== undefined ? { firstOffset } : {}),
      }),
    ),
  );
  const started = starts.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
  const failed = starts.find((s) => s.status === "rejected");
  if (failed) {
    await Promise.all(started.map((thread) => thread.results(0).catch(() => {})));
    throw failed.reason;
  }
  return {
    async results(timeoutMs: number) {
      const parts = await Promise.all(started.map((thread) => thread.results(timeoutMs)));
      const latencies = new Float64Array(parts.reduce((n, part) => n + part.delivered, 0));
      let at = 0;
      for (const part of parts) latencies.set(part.latencies, at), (at += part.delivered);
      // When the first thread began opening, and when the last stream of all ended (epoch ms).
      const startedAt = Math.min(...parts.map((part) => part.startedAt));
      const endedAt = Math.max(...parts.map((part) => part.endedAt));
      return {
        delivered: latencies.length,
        latencies,
        ended: parts.reduce((n, part) => n + part.ended, 0),
        startedAt,
        endedAt,
      };
    },
  };
}
