import { createHash, randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { ListObjectsV2Command, PutObjectCommand } from "@aws-sdk/client-s3";
import { type Client, Code } from "@connectrpc/connect";
import type { BlobRequest } from "@loom/blob-plane/exchange";
import { newId } from "@loom/contracts/ids";
import { AssetUrlOperation, StorageService } from "@loom/proto/storage/v1/storage_pb";
import { headersFor } from "@loom/server/principal";
import { clientFor, inProcessTransport } from "@loom/server/transports";
import { createLogger } from "@loom/telemetry/logger";
import { type FreshS3Bucket, freshS3Bucket } from "@loom/testing/s3";
import { needs } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createS3BlobStore } from "../src/blobs/s3.ts";
import { storageConfigSchema } from "../src/config.ts";
import { openStorageStore, type WiredStorage, wireStorage } from "../src/wiring.ts";

const sha = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe.skipIf(!needs("S3_TEST_ENDPOINT", "storage data plane on S3 (MinIO)"))(
  "storage data plane on S3 (MinIO)",
  () => {
    const logger = createLogger("storage-test", process.env.TEST_LOG_LEVEL ?? "silent");
    const principal = { userId: newId(), organizationId: newId() };
    const call = { headers: headersFor(principal) };
    let s3: FreshS3Bucket;
    const wirings: WiredStorage[] = [];

    /** The storage service on the test bucket; `more` overrides settings (a quota, a smaller size limit). */
    async function storageOn(more: Record<string, string> = {}) {
      const settings = storageConfigSchema.parse({
        SERVICE_TOKEN: "x".repeat(16),
        PUBLIC_URL: "http://loom.test",
        BLOB_SIGNING_KEY: "k".repeat(32),
        ...s3.env,
        ...more,
      });
      const wired = await wireStorage(
        await openStorageStore({ db: "storage" }),
        createS3BlobStore({ ...settings, S3_BUCKET: s3.bucket }),
        settings,
        { logger, publicUrl: () => settings.PUBLIC_URL },
      );
      wirings.push(wired);
      return {
        serve: wired.serveBlob,
        storage: clientFor(StorageService, inProcessTransport([wired.service], "t".repeat(24), logger)) as Client<
          typeof StorageService
        >,
      };
    }

    beforeAll(async () => {
      s3 = await freshS3Bucket("loom-data-plane");
    });
    afterAll(async () => {
      for (const wired of wirings) await wired.service.close();
      await s3?.cleanup();
    });

    const request = (
      method: BlobRequest["method"],
      token: string,
      body?: Buffer,
      headers: BlobRequest["headers"] = {},
    ): BlobRequest => ({
      method,
      token,
      headers: body ? { "content-length": String(body.length), ...headers } : headers,
      body: body
        ? Readable.from([body.subarray(0, Math.floor(body.length / 2)), body.subarray(Math.floor(body.length / 2))])
        : undefined,
      signal: new AbortController().signal,
    });
    const objectsUnder = async (prefix: string) =>
      (await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix }))).KeyCount ?? 0;

    it("with S3_PUBLIC_URLS=false every byte goes through Loom: uploads of known and unknown length (parts), downloads, ranges", async () => {
      const { storage, serve } = await storageOn({ S3_PUBLIC_URLS: "false" });
      const { bucket } = await storage.createBucket({ name: "b" }, call);
      await storage.createAsset({ bucketId: bucket!.bucketId, name: "big/file.bin" }, call);
      const { url, headers } = await storage.createAssetUrl({ bucketId: bucket!.bucketId, name: "big/file.bin" }, call);
      expect(url.startsWith("http://loom.test/blobs/")).toBe(true);
      expect(headers).toEqual({});
      const token = url.slice("http://loom.test/blobs/".length);
      const bytes = randomBytes(12 * 1024 * 1024 + 7);
      expect((await serve(request("PUT", token, bytes, { "content-type": "application/x-big" }))).status).toBe(200);
      const got = await serve(request("GET", token));
      expect(got.headers).toMatchObject({
        "content-length": String(bytes.length),
        "content-type": "application/x-big",
      });
      expect(sha(await buffer(got.body!))).toBe(sha(bytes));
      const part = await serve(request("GET", token, undefined, { range: "bytes=5242880-5242889" }));
      expect(part.status).toBe(206);
      expect(await buffer(part.body!)).toEqual(bytes.subarray(5242880, 5242890));
      const { asset } = await storage.getAsset({ bucketId: bucket!.bucketId, name: "big/file.bin" }, call);
      expect(asset!.size).toBe(BigInt(bytes.length));
      // No Content-Length: the bytes go in parts.
      const chunked: BlobRequest = {
        method: "PUT",
        token,
        headers: {},
        body: Readable.from([bytes.subarray(0, 6_000_000), bytes.subarray(6_000_000)]),
        signal: new AbortController().signal,
      };
      expect((await serve(chunked)).status).toBe(200);
      expect(sha(await buffer((await serve(request("GET", token))).body!))).toBe(sha(bytes));
      const single = await storage.createAssetUrl(
        { bucketId: bucket!.bucketId, name: "big/file.bin", operation: AssetUrlOperation.GET },
        call,
      );
      expect(single.url.startsWith("http://loom.test/blobs/")).toBe(true);
    });

    it("an upload replaces the asset's object with a new one and removes the old; the sweep removes objects no asset names", async () => {
      const { storage, serve } = await storageOn({ S3_PUBLIC_URLS: "false" });
      const wired = wirings.at(-1)!;
      const { bucket } = await storage.createBucket({ name: "b" }, call);
      const bucketId = bucket!.bucketId;
      await storage.createAsset({ bucketId, name: "f" }, call);
      const token = (await storage.createAssetUrl({ bucketId, name: "f" }, call)).url.slice(
        "http://loom.test/blobs/".length,
      );
      const prefix = `${principal.organizationId}/${bucketId}/`;
      const keys = async () =>
        ((await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix }))).Contents ?? []).map(
          (o) => o.Key!,
        );
      await serve(request("PUT", token, Buffer.from("first")));
      const [first] = await keys();
      await serve(request("PUT", token, Buffer.from("second")));
      const [second, ...others] = await keys();
      expect([second === first, others]).toEqual([false, []]);
      // What a stop between an upload's steps leaves: an object nobody names (planted, as a crash would leave it).
      const orphan = `${prefix}${newId()}.00000000000000ff`;
      await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: orphan, Body: "orphan" }));
      expect(await wired.sweepOrphans(0)).toBeGreaterThanOrEqual(1);
      expect(await keys()).toEqual([second]);
      expect((await buffer((await serve(request("GET", token))).body!)).toString()).toBe("second");
    });

    it("a download on a Loom URL is redirected (307) to a presigned S3 URL, which answers ranges itself; a URL with no bytes yet is 404", async () => {
      const { storage, serve } = await storageOn();
      const { bucket } = await storage.createBucket({ name: "b" }, call);
      await storage.createAsset({ bucketId: bucket!.bucketId, name: "r.txt" }, call);
      const { url } = await storage.createAssetUrl({ bucketId: bucket!.bucketId, name: "r.txt" }, call);
      const token = url.slice("http://loom.test/blobs/".length);
      await expect(serve(request("GET", token))).rejects.toMatchObject({ code: Code.NotFound });
      expect(
        (await serve(request("PUT", token, Buffer.from("0123456789"), { "content-type": "text/plain" }))).status,
      ).toBe(200);
      const answer = await serve(request("GET", token));
      expect(answer.status).toBe(307);
      expect(answer.headers.location!.startsWith(s3.settings.S3_ENDPOINT)).toBe(true);
      const followed = await fetch(answer.headers.location!, { headers: { range: "bytes=2-4" } });
      expect([followed.status, await followed.text(), followed.headers.get("content-type")]).toEqual([
        206,
        "234",
        "text/plain",
      ]);
    });

    it("one operation gets a presigned S3 URL; an upload through it shows in the asset's size and updated_at when next read", async () => {
      const { storage } = await storageOn();
      const { bucket } = await storage.createBucket({ name: "b" }, call);
      const { asset: created } = await storage.createAsset({ bucketId: bucket!.bucketId, name: "direct.txt" }, call);
      const put = await storage.createAssetUrl(
        { bucketId: bucket!.bucketId, name: "direct.txt", operation: AssetUrlOperation.PUT },
        call,
      );
      expect(put.url.startsWith(s3.settings.S3_ENDPOINT)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 1100)); // S3 times are whole seconds: let updated_at move
      const uploaded = await fetch(put.url, {
        method: "PUT",
        headers: { ...put.headers, "content-type": "text/plain" },
        body: "straight to S3",
      });
      expect(uploaded.status).toBe(200);
      const { asset } = await storage.getAsset(
        { bucketId: bucket!.bucketId, name: "direct.txt", includeContents: true },
        call,
      );
      expect(asset!.size).toBe(14n);
      expect(asset!.contentType).toBe("text/plain");
      expect(Buffer.from(asset!.contents!).toString()).toBe("straight to S3");
      expect(Number(asset!.updatedAt!.seconds)).toBeGreaterThan(Number(created!.updatedAt!.seconds));
      const listed = (await storage.listAssets({ bucketId: bucket!.bucketId }, call)).assets[0]!;
      expect(listed.size).toBe(14n);

      const get = await storage.createAssetUrl(
        { bucketId: bucket!.bucketId, name: "direct.txt", operation: AssetUrlOperation.GET },
        call,
      );
      expect(get.url.startsWith(s3.settings.S3_ENDPOINT)).toBe(true);
      expect(await (await fetch(get.url)).text()).toBe("straight to S3");
    });

    it("with a quota or a size limit under S3's own, a PUT URL points at Loom, which enforces them", async () => {
      for (const more of [{ STORAGE_QUOTA_BYTES: "1000000" }, { ASSET_MAX_BYTES: "1000" }] as Array<
        Record<string, string>
      >) {
        const { storage, serve } = await storageOn(more);
        const { bucket } = await storage.createBucket({ name: "b" }, call);
        await storage.createAsset({ bucketId: bucket!.bucketId, name: "limited" }, call);
        const put = await storage.createAssetUrl(
          { bucketId: bucket!.bucketId, name: "limited", operation: AssetUrlOperation.PUT },
          call,
        );
        expect(put.url.startsWith("http://loom.test/blobs/")).toBe(true);
        const token = put.url.slice("http://loom.test/blobs/".length);
        await expect(serve(request("PUT", token, randomBytes(1_000_001)))).rejects.toMatchObject({
          code: Code.OutOfRange,
        });
        const get = await storage.createAssetUrl(
          { bucketId: bucket!.bucketId, name: "limited", operation: AssetUrlOperation.GET },
          call,
        );
        expect(get.url.startsWith(s3.settings.S3_ENDPOINT)).toBe(true); // downloads are never limited
      }
    });

    it("deleting an asset, then a bucket, removes their objects from S3", async () => {
      const { storage, serve } = await storageOn();
      const { bucket } = await storage.createBucket({ name: "b" }, call);
      const bucketId = bucket!.bucketId;
      for (const name of ["a", "b", "c"]) {
        await storage.createAsset({ bucketId, name }, call);
        const { url } = await storage.createAssetUrl({ bucketId, name }, call);
        await serve(request("PUT", url.slice("http://loom.test/blobs/".length), Buffer.from(name)));
      }
      const prefix = `${principal.organizationId}/${bucketId}/`;
      expect(await objectsUnder(prefix)).toBe(3);
      await storage.deleteAsset({ bucketId, name: "a" }, call);
      expect(await objectsUnder(prefix)).toBe(2);
      await storage.deleteBucket({ bucketId }, call);
      expect(await objectsUnder(prefix)).toBe(0);
    });
  },
);
