import { performance } from "node:perf_hooks";
import { collectGarbage } from "./manual-gc.ts";

export interface MemoryReleaseOptions {
  /** How often to look (ms). */
  everyMs: number;
  /** Event-loop utilization under which the last interval counts as quiet. */
  quietBelow: number;
  /** How far RSS must have grown since the last release before another (bytes). */
  grownBy: number;
}

const defaults: MemoryReleaseOptions = { everyMs: 5_000, quietBelow: 0.05, grownBy: 32 * 1024 * 1024 };

/**
 * Gives memory back to the system once a burst of work is over. During a
 * burst V8's heap grows into new pages; after it, the collector frees the
 * objects but keeps the pages pooled for reuse, and the memory reducer that
 * would release them does not run in a server whose timers never let it
 * look idle. Measured on the all-in-one: RSS 145 MB idle, 302 MB after
 * 10,000 runs and still 302 MB a minute later, with the JS heap back at
 * 50 MB — 200 MB of pooled 256 KiB pages (docs/decisions.md, "Memory after
 * a burst"). So: every `everyMs`, when RSS has grown by `grownBy` since the
 * last release and the last interval was quiet, one memory-reducing full
 * collection (V8's "last-resort" flavor, which also frees the pooled pages;
 * a few ms on a heap this size).
 */
export function releaseMemoryWhenQuiet(options: Partial<MemoryReleaseOptions> = {}): {
  stop(): void;
  releases(): number;
} {
  const { everyMs, quietBelow, grownBy } = { ...defaults, ...options };
  let floor = residentBytes() ?? 0;
  let last = performance.eventLoopUtilization();
  let count = 0;
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    const rss = residentBytes();
    if (rss === undefined) return;
    if (rss < floor) floor = rss;
    if (busy >= quietBelow || rss - floor < grownBy) return;
    collectGarbage({ type: "major", execution: "sync", flavor: "last-resort" });
    count++;
    floor = residentBytes() ?? floor;
  }, everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer), releases: () => count };
}

/**
 * The process's RSS, or undefined when it cannot be read: libuv reads it from
 * /proc/self/stat, which needs a descriptor, and a process out of them
 * (EMFILE) must skip a look, not throw from a timer and exit.
 */
function residentBytes(): number | undefined {
  try {
    return process.memoryUsage.rss();
  } catch {
    return undefined;
  }
}
