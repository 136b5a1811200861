import { createHash, randomBytes, randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import {
  AbortMultipartUploadCommand,
  CreateMultipartUploadCommand,
  ListMultipartUploadsCommand,
  PutObjectCommand,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { isDependencyDown } from "@loom/runtime/dependency-down";
import { freePort } from "@loom/testing/processes";
import { type FreshS3Bucket, freshS3Bucket } from "@loom/testing/s3";
import { needs } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BlobStore, BlobTooLarge } from "../src/blobs/port.ts";
import { createS3BlobStore, type S3BlobSettings } from "../src/blobs/s3.ts";
import { blobKey, blobStoreContract } from "./blob-store-contract.ts";

const mib = 1024 * 1024;
const runs = needs("S3_TEST_ENDPOINT", "S3 blob store on MinIO");

/** `size` random bytes in chunks of 64 KiB, hashed as they go out. */
function randomBody(size: number): { body: Readable; sha256: () => string } {
  const hash = createHash("sha256");
  let left = size;
  const body = new Readable({
    read() {
      if (left === 0) return void this.push(null);
      const chunk = randomBytes(Math.min(64 * 1024, left));
      left -= chunk.length;
      hash.update(chunk);
      this.push(chunk);
    },
  });
  return { body, sha256: () => hash.digest("hex") };
}

async function sha256Of(stream: Readable): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of stream) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

async function failureOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.fail("expected a failure"),
    (error: unknown) => error,
  );
}

describe.skipIf(!runs)("S3 blob store on MinIO", () => {
  blobStoreContract("S3 (MinIO)", async () => {
    const bucket = await freshS3Bucket();
    const store = createS3BlobStore(bucket.settings);
    await store.init();
    return { store, cleanup: bucket.cleanup };
  });

  let bucket: FreshS3Bucket;
  let store: BlobStore;
  beforeAll(async () => {
    bucket = await freshS3Bucket();
    store = createS3BlobStore(bucket.settings);
    await store.init();
  });
  afterAll(async () => {
    await store?.close();
    await bucket?.cleanup();
  });

  it("uploads a blob larger than a part in parts (12 MiB, parts of 5 MiB) and reads the same bytes back", async () => {
    const key = blobKey();
    const { body, sha256 } = randomBody(12 * mib);
    const info = await store.write(key, body, { contentType: "application/octet-stream", maxBytes: 20 * mib });
    expect(info.size).toBe(12 * mib);
    // A multipart object's ETag says how many parts made it.
    expect(info.etag).toMatch(/^"[0-9a-f]{32}-3"$/);
    expect(await sha256Of((await store.read(key))!)).toBe(sha256());
  });

  it("refuses a multipart upload past maxBytes, aborts it (no parts left behind) and keeps the old bytes", async () => {
    const key = blobKey();
    const old = await store.write(key, Readable.from([Buffer.from("old bytes")]), {
      contentType: "text/plain",
      maxBytes: 100,
    });
    const { body } = randomBody(12 * mib);
    await expect(
      store.write(key, body, { contentType: "application/octet-stream", maxBytes: 7 * mib }),
    ).rejects.toBeInstanceOf(BlobTooLarge);
    expect(await store.stat(key)).toEqual(old);
    const pending = await bucket.client.send(new ListMultipartUploadsCommand({ Bucket: bucket.bucket, Prefix: key }));
    expect(pending.Uploads ?? []).toEqual([]);
  });

  it("drops multipart uploads a stopped process left unfinished, once older than asked, and no other", async () => {
    // What a SIGKILL in the middle of a multipart upload leaves (made behind the adapter's back: killing this test process is not an option).
    const key = blobKey();
    const { UploadId } = await bucket.client.send(
      new CreateMultipartUploadCommand({ Bucket: bucket.bucket, Key: key }),
    );
    await bucket.client.send(
      new UploadPartCommand({ Bucket: bucket.bucket, Key: key, UploadId, PartNumber: 1, Body: randomBytes(5 * mib) }),
    );
    const notOurs = await bucket.client.send(
      new CreateMultipartUploadCommand({ Bucket: bucket.bucket, Key: "someone-else/file" }),
    );
    const pending = async () =>
      ((await bucket.client.send(new ListMultipartUploadsCommand({ Bucket: bucket.bucket }))).Uploads ?? []).map(
        (u) => u.Key,
      );
    expect(await store.dropUnfinished(new Date(Date.now() - 60_000))).toBe(0); // too young: maybe still arriving
    expect(await pending()).toEqual(expect.arrayContaining([key, "someone-else/file"]));
    expect(await store.dropUnfinished(new Date(Date.now() + 60_000))).toBe(1);
    expect(await pending()).toEqual(["someone-else/file"]);
    await bucket.client.send(
      new AbortMultipartUploadCommand({ Bucket: bucket.bucket, Key: "someone-else/file", UploadId: notOurs.UploadId }),
    );
  });

  it("deletes a prefix holding more than one listing page (1,005 objects) and nothing else", async () => {
    const organization = randomUUID();
    const doomed = `${organization}/${randomUUID()}/`;
    const kept = blobKey(organization);
    const keys = Array.from({ length: 1005 }, () => `${doomed}${randomUUID()}`);
    // Put behind the adapter's back: 1,005 uploads through it would only be slower.
    for (let i = 0; i < keys.length; i += 50) {
      await Promise.all(
        keys
          .slice(i, i + 50)
          .map((Key) => bucket.client.send(new PutObjectCommand({ Bucket: bucket.bucket, Key, Body: "x" }))),
      );
    }
    await store.write(kept, Readable.from([Buffer.from("kept")]), { contentType: "text/plain", maxBytes: 10 });
    await store.deletePrefix(doomed);
    expect(await store.stat(keys[0]!)).toBeUndefined();
    expect(await store.stat(keys[1004]!)).toBeUndefined();
    expect(await store.stat(kept)).toMatchObject({ size: 4 });
    const left = await bucket.client.send(new ListMultipartUploadsCommand({ Bucket: bucket.bucket, Prefix: doomed }));
    expect(left.Uploads ?? []).toEqual([]);
  });

  it("presigns a PUT that plain fetch can use, then a GET that gives the bytes back; stat sees the upload", async () => {
    const key = blobKey();
    const bytes = randomBytes(300_000);
    const put = await store.presign!(key, "PUT", 60);
    // Only host is signed: nothing else must be sent, and Content-Type may be.
    expect(put.headers).toEqual({});
    const query = new URL(put.url).searchParams;
    expect(query.get("X-Amz-SignedHeaders")).toBe("host");
    // MinIO ignores it, AWS does not: the SDK's default puts the checksum of an empty body in the URL.
    expect(
      [...query.keys()].filter((name) => name.startsWith("x-amz-checksum") || name.startsWith("x-amz-sdk-checksum")),
    ).toEqual([]);
    const uploaded = await fetch(put.url, { method: "PUT", body: bytes, headers: { "content-type": "image/png" } });
    expect(uploaded.status).toBe(200);
    expect(await store.stat(key)).toMatchObject({ size: 300_000, contentType: "image/png" });
    const get = await store.presign!(key, "GET", 60);
    const downloaded = await fetch(get.url);
    expect(downloaded.status).toBe(200);
    expect(downloaded.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(await downloaded.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it("a presigned GET is not a PUT, and a presigned URL for one key does not open another", async () => {
    const key = blobKey();
    await store.write(key, Readable.from([Buffer.from("mine")]), { contentType: "text/plain", maxBytes: 10 });
    const get = await store.presign!(key, "GET", 60);
    expect((await fetch(get.url, { method: "PUT", body: "overwritten" })).status).toBe(403);
    const other = new URL(get.url);
    other.pathname = other.pathname.replace(/[^/]+$/, randomUUID());
    expect((await fetch(other)).status).toBe(403);
    expect(await (await fetch(get.url)).text()).toBe("mine");
  });

  it("refuses an expired presigned URL", async () => {
    const key = blobKey();
    await store.write(key, Readable.from([Buffer.from("bytes")]), { contentType: "text/plain", maxBytes: 10 });
    const get = await store.presign!(key, "GET", 1);
    const put = await store.presign!(key, "PUT", 1);
    // SigV4 dates have whole seconds: 1 s after signing is not over before 2 s have passed.
    await sleep(2_100);
    const refused = await fetch(get.url);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain("expired");
    expect((await fetch(put.url, { method: "PUT", body: "new" })).status).toBe(403);
    expect(await store.stat(key)).toMatchObject({ size: 5 });
  });

  it("downloads held open by slow readers (60, more than the SDK's 50 sockets) do not hold up other calls", async () => {
    const key = blobKey();
    await store.write(key, Readable.from([Buffer.from("bytes")]), { contentType: "text/plain", maxBytes: 10 });
    const held = await Promise.all(Array.from({ length: 60 }, () => store.read(key)));
    const started = Date.now();
    expect(await store.stat(key)).toMatchObject({ size: 5 });
    expect(Date.now() - started).toBeLessThan(5_000);
    for (const stream of held) stream!.destroy();
  });

  it("refuses to start on a bucket that does not exist, and says which", async () => {
    const missing = createS3BlobStore({ ...bucket.settings, S3_BUCKET: `${bucket.bucket}-missing` });
    const error = await failureOf(missing.init());
    expect((error as Error).message).toMatch(
      new RegExp(`^S3_BUCKET: bucket "${bucket.bucket}-missing" does not exist`),
    );
    expect(isDependencyDown(error)).toBe(false);
    expect(await missing.ready()).toBe(false);
    await missing.close();
  });

  it("refuses to start with credentials S3 refuses, naming S3_ACCESS_KEY_ID", async () => {
    const wrong = createS3BlobStore({ ...bucket.settings, S3_SECRET_ACCESS_KEY: "not-the-secret" });
    const error = await failureOf(wrong.init());
    expect((error as Error).message).toMatch(
      new RegExp(`^S3_ACCESS_KEY_ID: S3 at \\S+ refused these credentials for bucket "${bucket.bucket}" \\(403\\)`),
    );
    await wrong.close();
  });

  it("wrong credentials are a failure of ours (500), not an outage", async () => {
    const wrong = createS3BlobStore({ ...bucket.settings, S3_SECRET_ACCESS_KEY: "not-the-secret" });
    const error = await failureOf(wrong.stat(blobKey()));
    expect(isDependencyDown(error)).toBe(false);
    await wrong.close();
  });
});

describe("S3 blob store when S3 is down", () => {
  const settings = (endpoint: string, bucket = "loom-down"): S3BlobSettings => ({
    S3_BUCKET: bucket,
    S3_ENDPOINT: endpoint,
    S3_REGION: "us-east-1",
    S3_ACCESS_KEY_ID: "key",
    S3_SECRET_ACCESS_KEY: "secret",
    S3_FORCE_PATH_STYLE: true,
  });
  const everyCall = (store: BlobStore): Array<() => Promise<unknown>> => [
    () => store.init(),
    () => store.stat(blobKey()),
    () => store.read(blobKey()),
    () => store.write(blobKey(), Readable.from([Buffer.from("x")]), { contentType: "text/plain", maxBytes: 10 }),
    () => store.delete(blobKey()),
    () => store.deletePrefix(`${randomUUID()}/`),
  ];

  it("nothing listens: every call fails as a dependency that is down (503), and it is not ready", async () => {
    const store = createS3BlobStore(settings(`http://127.0.0.1:${await freePort()}`));
    for (const call of everyCall(store)) expect(isDependencyDown(await failureOf(call()))).toBe(true);
    expect(await store.ready()).toBe(false);
    await store.close();
  });

  describe("S3 answers 500 or 503 SlowDown, or never answers", () => {
    let server: Server;
    let endpoint: string;
    beforeAll(async () => {
      server = createServer((req, res) => {
        if (req.url?.startsWith("/loom-silent")) return; // accepts the request and never answers
        const [status, code] = req.url?.startsWith("/loom-slow") ? [503, "SlowDown"] : [500, "InternalError"];
        res.writeHead(status, { "content-type": "application/xml" });
        res.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${code}</Message></Error>`);
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });

    it("5xx: every call fails as a dependency that is down (after the SDK's retries)", async () => {
      const store = createS3BlobStore(settings(endpoint));
      for (const call of everyCall(store)) expect(isDependencyDown(await failureOf(call()))).toBe(true);
      await store.close();
      const throttled = createS3BlobStore(settings(endpoint, "loom-slow"));
      expect(isDependencyDown(await failureOf(throttled.stat(blobKey())))).toBe(true);
      await throttled.close();
    });

    it("no answer within the request timeout: a dependency that is down", async () => {
      const store = createS3BlobStore(settings(endpoint, "loom-silent"), { requestTimeoutMs: 300 });
      const error = await failureOf(store.stat(blobKey()));
      expect(isDependencyDown(error)).toBe(true);
      await store.close();
    });
  });
});
