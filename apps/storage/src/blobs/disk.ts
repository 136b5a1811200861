import { randomBytes } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { type FileHandle, mkdir, open, readdir, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { StartupRefused } from "@loom/runtime/shutdown";
import { byteLimit } from "./byte-limit.ts";
import { type BlobInfo, type BlobStore, blobKeyPattern, type StoredBlob } from "./port.ts";

const prefixPattern = /^[0-9a-f-]{36}\/([0-9a-f-]{36}\/)?$/;

/** Blobs per page of `list`. */
const listPage = 1_000;

/** Directories under `path` named as ids (organizations, buckets). */
async function subdirectories(path: string): Promise<string[]> {
  const entries = await readdir(path, { withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isDirectory() && /^[0-9a-f-]{36}$/.test(e.name)).map((e) => e.name);
}

function checked(pattern: RegExp, value: string): string {
  if (!pattern.test(value)) throw new Error(`not a blob key: ${JSON.stringify(value)}`);
  return value;
}

/** What a blob file says about its bytes, in its header. */
interface Header {
  contentType: string;
  etag: string;
}

/** A blob file: a 4-byte big-endian length, that many bytes of header JSON, then the blob's bytes. */
function encodeHeader(header: Header): Buffer {
  const json = Buffer.from(JSON.stringify(header));
  const length = Buffer.alloc(4);
  length.writeUInt32BE(json.length);
  return Buffer.concat([length, json]);
}

async function readHeader(file: FileHandle): Promise<{ header: Header; offset: number; info: BlobInfo }> {
  const length = Buffer.alloc(4);
  await file.read(length, 0, 4, 0);
  const json = Buffer.alloc(length.readUInt32BE());
  await file.read(json, 0, json.length, 4);
  const header = JSON.parse(json.toString("utf8")) as Header;
  const offset = 4 + json.length;
  const stats = await file.stat();
  return {
    header,
    offset,
    info: { size: stats.size - offset, contentType: header.contentType, etag: header.etag, updatedAt: stats.mtime },
  };
}

/**
 * Asset bytes as files under one directory: the embedded default. An upload
 * streams into a temporary file, is flushed to disk (fsync), then renamed over
 * the old one — readers see the old bytes or the new, never a mix, and a
 * failed or refused upload leaves the old bytes. The content type and ETag
 * live in the file's own header, so they are replaced in the same rename as
 * the bytes they describe.
 */
export function createDiskBlobStore(directory: string): BlobStore {
  const root = resolve(directory);
  const incoming = join(root, ".incoming");
  // Keys are ids Loom makes (port.ts `blobKeyPattern`): anything else never reaches the file system.
  const pathOf = (key: string) => join(root, checked(blobKeyPattern, key));

  /** The blob file, open (so a replacing upload cannot change what it reads), or undefined. */
  async function openBlob(key: string) {
    let file: FileHandle;
    try {
      file = await open(pathOf(key), "r");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
    try {
      return { file, ...(await readHeader(file)) };
    } catch (error) {
      await file.close();
      throw error;
    }
  }

  return {
    kind: "disk",
    async init() {
      try {
        // Uploads cut short by a crash: nothing refers to them.
        await rm(incoming, { recursive: true, force: true });
        await mkdir(incoming, { recursive: true });
      } catch (error) {
        throw new StartupRefused(`BLOB_DIR: cannot keep asset bytes in ${root}: ${(error as Error).message}`, {
          cause: error,
        });
      }
    },
    ready: () =>
      stat(incoming).then(
        (s) => s.isDirectory(),
        () => false,
      ),
    async close() {},

    async write(key, body, { contentType, maxBytes, size }) {
      const target = pathOf(key);
      const temporary = join(incoming, randomBytes(12).toString("hex"));
      try {
        await writeFile(temporary, encodeHeader({ contentType, etag: `"${randomBytes(12).toString("base64url")}"` }));
        await pipeline(body, byteLimit(maxBytes, size), createWriteStream(temporary, { flags: "a" }));
        const file = await open(temporary, "r");
        try {
          const stored = await readHeader(file);
          await file.datasync(); // acknowledged only once stored
          await mkdir(dirname(target), { recursive: true });
          await rename(temporary, target);
          return stored.info;
        } finally {
          await file.close();
        }
      } catch (error) {
        await rm(temporary, { force: true });
        throw error;
      }
    },

    async read(key, range, etag) {
      const blob = await openBlob(key);
      if (!blob) return undefined;
      if (etag !== undefined && blob.header.etag !== etag) {
        await blob.file.close();
        return undefined;
      }
      const start = blob.offset + (range?.start ?? 0);
      const end = blob.offset + (range?.end ?? blob.info.size - 1);
      if (end < start) {
        // An empty blob: createReadStream has no empty range.
        await blob.file.close();
        return Readable.from([]);
      }
      return createReadStream("", { fd: blob.file, start, end });
    },
    async stat(key) {
      const blob = await openBlob(key);
      if (!blob) return undefined;
      await blob.file.close();
      return blob.info;
    },
    async delete(key) {
      await rm(pathOf(key), { force: true });
    },
    async deletePrefix(prefix) {
      await rm(join(root, checked(prefixPattern, prefix)), { recursive: true, force: true });
    },
    async dropUnfinished(before) {
      let dropped = 0;
      for (const name of await readdir(incoming).catch(() => [])) {
        const path = join(incoming, name);
        const written = (await stat(path).catch(() => undefined))?.mtime;
        if (!written || written.getTime() >= before.getTime()) continue;
        await rm(path, { force: true });
        dropped++;
      }
      return dropped;
    },
    async *list() {
      // `<organization>/<bucket>/<file>`: one page per bucket directory (`.incoming` is not one).
      for (const organization of await subdirectories(root)) {
        for (const bucket of await subdirectories(join(root, organization))) {
          const directory = join(root, organization, bucket);
          const names = (await readdir(directory).catch(() => []))
            .map((name) => `${organization}/${bucket}/${name}`)
            .filter((key) => blobKeyPattern.test(key));
          for (let start = 0; start < names.length; start += listPage) {
            const page = await Promise.all(
              names
                .slice(start, start + listPage)
                .map(async (key) => ({ key, updatedAt: (await stat(join(root, key)).catch(() => undefined))?.mtime })),
            );
            yield page.filter((blob): blob is StoredBlob => blob.updatedAt !== undefined); // gone since the listing: nothing to sweep
          }
        }
      }
    },
  };
}
