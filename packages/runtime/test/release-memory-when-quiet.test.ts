import { describe, expect, it } from "vitest";
import { releaseMemoryWhenQuiet } from "../src/release-memory-when-quiet.ts";

const mib = 1024 * 1024;

describe("memory release after a burst", () => {
  it("gives the heap's grown pages back once the process goes quiet, and not while it is busy", async () => {
    const release = releaseMemoryWhenQuiet({ everyMs: 100, grownBy: 32 * mib });
    try {
      const before = process.memoryUsage.rss();
      // A burst: short-lived objects by the hundreds of megabytes, some kept a while, as requests keep theirs.
      let kept: object[] = [];
      const busyUntil = Date.now() + 600;
      while (Date.now() < busyUntil) {
        kept.push(Array.from({ length: 1_000 }, (_, i) => ({ i, text: `request ${i}` })));
        if (kept.length > 200) kept = [];
      }
      kept = [];
      const grown = process.memoryUsage.rss();
      expect(grown - before).toBeGreaterThan(32 * mib);
      // Busy the whole time: nothing was released yet.
      expect(release.releases()).toBe(0);
      await expect.poll(() => release.releases(), { timeout: 5_000, interval: 100 }).toBeGreaterThan(0);
      expect(process.memoryUsage.rss()).toBeLessThan(grown - 24 * mib);
    } finally {
      release.stop();
    }
  });
});
