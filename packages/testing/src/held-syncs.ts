import { open } from "node:fs/promises";
import { vi } from "vitest";

/** The prototype of fs/promises file handles: spying on its `datasync` sees every WAL sync (kit `walSync` makes one per sync). */
async function fileHandlePrototype(file: string): Promise<{ datasync(): Promise<void> }> {
  const probe = await open(file);
  await probe.close();
  return Object.getPrototypeOf(probe) as { datasync(): Promise<void> };
}

/** The error a failed fdatasync(2) rejects with, as Node reports it (`EIO`, `ENOSPC`). */
export const syncError = (code: "EIO" | "ENOSPC") =>
  Object.assign(new Error(`${code}: fdatasync failed`), { code, syscall: "fdatasync" });

/**
 * Every WAL sync held until `release()` lets the oldest one finish (if
 * one is held), or `fail(code)` makes it fail: the disk, slowed down (or broken). `synced`
 * counts the syncs; restore it when done.
 */
export async function heldSyncs(file: string) {
  const gates: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
  const synced = vi
    .spyOn(await fileHandlePrototype(file), "datasync")
    .mockImplementation(() => new Promise<void>((resolve, reject) => gates.push({ resolve, reject })));
  return {
    synced,
    release: () => gates.shift()?.resolve(),
    fail: (code: "EIO" | "ENOSPC") => gates.shift()!.reject(syncError(code)),
  };
}
