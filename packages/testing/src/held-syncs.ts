import { open } from "node:fs/promises";
import { vi } from "vitest";

/** The prototype of fs/promises file handles: spying on its `datasync` sees every WAL sync (kit `walSync` makes one per sync). */
async function fileHandlePrototype(file: string): Promise<{ datasync(): Promise<void> }> {
  const probe = await open(file);
  await probe.close();
  return Object.getPrototypeOf(probe) as { datasync(): Promise<void> };
}

/**
 * Every WAL sync held until `release()` lets the oldest one finish: the disk,
 * slowed down. `synced` counts the syncs; restore it when done.
 */
export async function heldSyncs(file: string) {
  const gates: Array<() => void> = [];
  const synced = vi.spyOn(await fileHandlePrototype(file), "datasync").mockImplementation(() => new Promise<void>((resolve) => gates.push(resolve)));
  return { synced, release: () => gates.shift()!() };
}

/** The next WAL sync fails with EIO (the disk, broken once). */
export async function failingSync(file: string) {
  return vi.spyOn(await fileHandlePrototype(file), "datasync").mockRejectedValueOnce(Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" }));
}
