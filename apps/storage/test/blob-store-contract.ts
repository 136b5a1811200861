import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BlobStore, BlobTooLarge } from "../src/blobs/port.ts";

export interface BlobStoreUnderTest {
  store: BlobStore;
  cleanup(): Promise<void>;
}

/** A key as the service makes them: `<organization>/<bucket>/<asset>`. */
export const blobKey = (organization = randomUUID(), bucket = randomUUID()) =>
  `${organization}/${bucket}/${randomUUID()}`;

const body = (content: string | Buffer) => Readable.from([Buffer.from(content)]);

async function contents(
  store: BlobStore,
  key: string,
  range?: { start: number; end: number },
): Promise<string | undefined> {
  const stream = await store.read(key, range);
  return stream && text(stream);
}

/** A body that sends `bytes` and then neither ends nor fails: only a limit checked as bytes arrive can refuse it. */
function endlessAfter(bytes: number): Readable {
  const stream = new Readable({ read() {} });
  stream.push(Buffer.alloc(bytes, "x"));
  return stream;
}

/**
 * What every BlobStore promises (port.ts), run against each adapter:
 * `make` gives a fresh, initialized store and a cleanup.
 */
export function blobStoreContract(name: string, make: () => Promise<BlobStoreUnderTest>): void {
  describe(`BlobStore contract: ${name}`, () => {
    let subject: BlobStoreUnderTest;
    let store: BlobStore;
    beforeAll(async () => {
      subject = await make();
      store = subject.store;
      await store.init();
    });
    afterAll(async () => {
      await subject?.store.close();
      await subject?.cleanup();
    });

    it("stores bytes with their content type and gives them back, with size, a quoted ETag and the time", async () => {
      const key = blobKey();
      const before = Date.now();
      const info = await store.write(key, body("héllo wörld"), {
        contentType: "text/plain; charset=utf-8",
        maxBytes: 1024,
      });
      expect(info).toMatchObject({ size: Buffer.byteLength("héllo wörld"), contentType: "text/plain; charset=utf-8" });
      expect(info.etag).toMatch(/^"[^"]+"$/);
      // Stores may keep whole seconds (S3's Last-Modified).
      expect(info.updatedAt.getTime()).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
      expect(info.updatedAt.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
      expect(await store.stat(key)).toEqual(info);
      expect(await contents(store, key)).toBe("héllo wörld");
    });

    it("stores an empty blob", async () => {
      const key = blobKey();
      expect((await store.write(key, body(""), { contentType: "application/octet-stream", maxBytes: 10 })).size).toBe(
        0,
      );
      expect(await contents(store, key)).toBe("");
    });

    it("reads an inclusive byte range", async () => {
      const key = blobKey();
      await store.write(key, body("0123456789"), { contentType: "text/plain", maxBytes: 100 });
      expect(await contents(store, key, { start: 2, end: 5 })).toBe("2345");
      expect(await contents(store, key, { start: 9, end: 9 })).toBe("9");
      expect(await contents(store, key, { start: 0, end: 9 })).toBe("0123456789");
    });

    it("answers undefined for a blob that is not there", async () => {
      expect(await store.read(blobKey())).toBeUndefined();
      expect(await store.stat(blobKey())).toBeUndefined();
    });

    it("replaces a blob's bytes, type and ETag", async () => {
      const key = blobKey();
      const first = await store.write(key, body("first"), { contentType: "text/plain", maxBytes: 100 });
      const second = await store.write(key, body("second, longer"), { contentType: "application/json", maxBytes: 100 });
      expect(second.etag).not.toBe(first.etag);
      expect(await store.stat(key)).toMatchObject({ size: 14, contentType: "application/json", etag: second.etag });
      expect(await contents(store, key)).toBe("second, longer");
    });

    it("takes a body of declared length in one go; one that ends short fails and keeps the old bytes", async () => {
      const key = blobKey();
      const bytes = Buffer.alloc(6 * 1024 * 1024 + 3, 7); // over one part, for stores that use parts
      expect(
        await store.write(key, Readable.from([bytes]), {
          contentType: "x/y",
          maxBytes: bytes.length,
          size: bytes.length,
        }),
      ).toMatchObject({ size: bytes.length });
      await expect(store.write(key, body("short"), { contentType: "x/y", maxBytes: 100, size: 10 })).rejects.toThrow();
      expect((await store.stat(key))?.size).toBe(bytes.length);
    });

    it("reads with an ETag only the blob that ETag names: undefined once another upload replaced it", async () => {
      const key = blobKey();
      const first = await store.write(key, body("first"), { contentType: "text/plain", maxBytes: 100 });
      const second = await store.write(key, body("second"), { contentType: "text/plain", maxBytes: 100 });
      expect(await store.read(key, undefined, first.etag)).toBeUndefined();
      const stream = await store.read(key, { start: 0, end: 2 }, second.etag);
      expect(stream && (await text(stream))).toBe("sec");
    });

    it("refuses more than maxBytes as they arrive (the body never ends) and keeps the old bytes", async () => {
      const key = blobKey();
      const old = await store.write(key, body("old bytes"), { contentType: "text/plain", maxBytes: 100 });
      await expect(
        store.write(key, endlessAfter(1025), { contentType: "text/plain", maxBytes: 1024 }),
      ).rejects.toBeInstanceOf(BlobTooLarge);
      expect(await store.stat(key)).toEqual(old);
      expect(await contents(store, key)).toBe("old bytes");
    });

    it("takes exactly maxBytes", async () => {
      const key = blobKey();
      expect((await store.write(key, body("x".repeat(1024)), { contentType: "text/plain", maxBytes: 1024 })).size).toBe(
        1024,
      );
    });

    it("keeps the old bytes when the upload's body fails midway (the caller went away)", async () => {
      const key = blobKey();
      await store.write(key, body("old bytes"), { contentType: "text/plain", maxBytes: 100 });
      let reads = 0;
      const failing = new Readable({
        read() {
          if (reads++ === 0) this.push(Buffer.from("new "));
          else this.destroy(Object.assign(new Error("aborted"), { code: "ECONNRESET" }));
        },
      });
      await expect(store.write(key, failing, { contentType: "text/plain", maxBytes: 100 })).rejects.toThrow("aborted");
      expect(await contents(store, key)).toBe("old bytes");
    });

    it("a refused first upload leaves no blob", async () => {
      const key = blobKey();
      await expect(
        store.write(key, endlessAfter(11), { contentType: "text/plain", maxBytes: 10 }),
      ).rejects.toBeInstanceOf(BlobTooLarge);
      expect(await store.stat(key)).toBeUndefined();
    });

    it("deletes a blob, and a blob that is not there without error", async () => {
      const key = blobKey();
      await store.write(key, body("bytes"), { contentType: "text/plain", maxBytes: 100 });
      await store.delete(key);
      expect(await store.stat(key)).toBeUndefined();
      expect(await store.read(key)).toBeUndefined();
      await store.delete(key);
    });

    it("deletes every blob under a bucket's prefix and nothing else", async () => {
      const organization = randomUUID();
      const [doomed, kept] = [randomUUID(), randomUUID()];
      const doomedKeys = [blobKey(organization, doomed), blobKey(organization, doomed), blobKey(organization, doomed)];
      const keptKeys = [blobKey(organization, kept), blobKey(randomUUID(), doomed)];
      for (const key of [...doomedKeys, ...keptKeys])
        await store.write(key, body(key), { contentType: "text/plain", maxBytes: 1024 });
      await store.deletePrefix(`${organization}/${doomed}/`);
      for (const key of doomedKeys) expect(await store.stat(key)).toBeUndefined();
      for (const key of keptKeys) expect(await contents(store, key)).toBe(key);
      await store.deletePrefix(`${organization}/${randomUUID()}/`); // nothing there: no error
    });

    it("deletes every blob of an organization", async () => {
      const organization = randomUUID();
      const keys = [blobKey(organization), blobKey(organization)];
      const other = blobKey();
      for (const key of [...keys, other])
        await store.write(key, body("x"), { contentType: "text/plain", maxBytes: 10 });
      await store.deletePrefix(`${organization}/`);
      for (const key of keys) expect(await store.stat(key)).toBeUndefined();
      expect(await store.stat(other)).toBeDefined();
    });

    it("lists every blob with when it was written, generation-named ones too", async () => {
      const organization = randomUUID();
      const first = blobKey(organization);
      const generation = `${blobKey(organization)}.${"0123456789abcdef"}`;
      const before = Date.now();
      await store.write(first, body("a"), { contentType: "text/plain", maxBytes: 10 });
      await store.write(generation, body("b"), { contentType: "text/plain", maxBytes: 10 });
      const listed = [];
      for await (const page of store.list()) listed.push(...page.filter((blob) => blob.key.startsWith(organization)));
      expect(listed.map((blob) => blob.key).sort()).toEqual([first, generation].sort());
      // Whole seconds on S3 (LastModified).
      for (const blob of listed)
        expect(blob.updatedAt.getTime()).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    });

    it("is ready once initialized", async () => {
      expect(await store.ready()).toBe(true);
    });
  });
}
