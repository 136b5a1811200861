import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statfsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A real file system that runs out of space: a size-limited tmpfs, and a file that takes what is left. */
export interface SmallDisk {
  dir: string;
  /** Writes a file that takes every free byte: the next write past what files hold already fails with ENOSPC. */
  fill(): void;
  /** Removes that file. */
  free(): void;
  unmount(): void;
}

/**
 * Mounts a tmpfs of `bytes` on a fresh directory (needs root), or answers
 * why it cannot: the caller skips its test and prints that reason.
 */
export function smallDisk(bytes: number): SmallDisk | string {
  const dir = mkdtempSync(join(tmpdir(), "loom-small-disk-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${bytes}`, "tmpfs", dir], { stdio: "pipe" });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    return `cannot mount a tmpfs (root needed): ${String((error as { stderr?: Buffer }).stderr ?? error).trim()}`;
  }
  const filler = join(dir, "filler");
  return {
    dir,
    fill() {
      const { bavail, bsize } = statfsSync(dir);
      try {
        writeFileSync(filler, Buffer.alloc(bavail * bsize));
      } catch (error) {
        // Full already, with the file taking what there was: the point.
        if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
      }
    },
    free: () => rmSync(filler, { force: true }),
    unmount() {
      execFileSync("umount", ["-l", dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
