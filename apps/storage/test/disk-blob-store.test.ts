import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createDiskBlobStore } from "../src/blobs/disk.ts";
import { blobStoreContract } from "./blob-store-contract.ts";

blobStoreContract("local disk", async () => {
  const dir = await mkdtemp(join(tmpdir(), "loom-disk-blobs-"));
  return { store: createDiskBlobStore(dir), cleanup: () => rm(dir, { recursive: true, force: true }) };
});

describe("local-disk blob store", () => {
  it("refuses keys that are not ids before touching the file system", async () => {
    const dir = await mkdtemp(join(tmpdir(), "loom-disk-blobs-"));
    const store = createDiskBlobStore(dir);
    await store.init();
    for (const key of ["../../etc/passwd", "a/b/c", `${"0".repeat(36)}/../${"0".repeat(36)}`]) {
      await expect(store.stat(key)).rejects.toThrow(/not a blob key/);
    }
    await expect(store.deletePrefix("../")).rejects.toThrow(/not a blob key/);
    expect(await readdir(dir)).toEqual([".incoming"]);
    await rm(dir, { recursive: true, force: true });
  });

  it("drops uploads a crash left half-written when it starts", async () => {
    const dir = await mkdtemp(join(tmpdir(), "loom-disk-blobs-"));
    const { mkdir, writeFile } = await import("node:fs/promises");
    await mkdir(join(dir, ".incoming"), { recursive: true });
    await writeFile(join(dir, ".incoming", "leftover"), "half");
    await createDiskBlobStore(dir).init();
    expect(await readdir(join(dir, ".incoming"))).toEqual([]);
    await rm(dir, { recursive: true, force: true });
  });
});
