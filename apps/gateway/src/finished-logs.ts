import { LRUCache } from "lru-cache";
import { keepAliveBytes } from "./sse.ts";

/**
 * A finished log from offset `from` to its terminal event, framed and encoded
 * once: a keep-alive, then every frame. `offsets[i]` is the offset of the
 * i-th frame and `starts[i]` where it begins in `bytes` (offsets rise, but
 * may skip a hole). A finished log never changes, so every stream of it can
 * be served these bytes.
 */
export interface FinishedLog {
  from: bigint;
  bytes: Buffer;
  offsets: bigint[];
  starts: number[];
}

/**
 * The bytes that serve a stream from `from`: the log's own Buffer for its
 * first offset, a view of it (no copy) for a start further in, the keep-alive
 * alone just after the terminal event. Undefined when `from` is before the
 * part of the log kept, or further past its end (a structure run's log may
 * grow after its terminal event, and such a start is followed as usual).
 */
export function finishedLogFrom(log: FinishedLog, from: bigint): Buffer[] | undefined {
  if (from < log.from) return undefined;
  if (from === log.from) return [log.bytes];
  // The first frame at or after `from`.
  let low = 0;
  let high = log.offsets.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (log.offsets[mid]! < from) low = mid + 1;
    else high = mid;
  }
  const index = low;
  if (index >= log.starts.length) {
    const last = log.offsets.at(-1);
    return last !== undefined && from === last + 1n ? [keepAliveBytes] : undefined;
  }
  return [keepAliveBytes, log.bytes.subarray(log.starts[index])];
}

/**
 * Finished logs by organization, kind and run, the least recently used out
 * first once they hold more than `maxBytes`.
 */
export function createFinishedLogs(maxBytes: number) {
  const logs = new LRUCache<string, FinishedLog>({
    maxSize: maxBytes,
    sizeCalculation: (log) => Math.max(1, log.bytes.length),
  });
  return {
    get: (key: string) => logs.get(key),
    /** Keeps `log` unless the one kept already reaches further back (a log larger than maxBytes is not kept). */
    put(key: string, log: FinishedLog): void {
      if (log.bytes.length > maxBytes) return;
      const kept = logs.peek(key);
      if (kept && kept.from <= log.from) return;
      logs.set(key, log);
    },
    bytes: () => logs.calculatedSize,
  };
}

export type FinishedLogs = ReturnType<typeof createFinishedLogs>;
