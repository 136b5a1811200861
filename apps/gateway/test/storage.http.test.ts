import { createHash } from "node:crypto";
import { readdir } from "node:fs/promises";
import { request as httpRequest, type IncomingHttpHeaders } from "node:http";
import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { storeKinds } from "@loom/testing/servers";
import { signAccessToken } from "@loom/testing/tokens";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assetListSchema, assetSchema, assetUrlSchema, bucketListSchema, bucketSchema } from "../src/schemas.ts";
import { expectError } from "./expect-error.ts";
import { organizationClients } from "./organization-clients.ts";

/** The largest asset the test stacks store: just over include_contents' 1 MiB, so that limit can be reached. */
const maxAssetBytes = 1024 * 1024 + 4096;
const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** A blob URL's answer, read whole. */
interface BlobAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  bytes: Buffer;
  /** The error body, when the answer is JSON. */
  body: any;
}

/**
 * A request on a signed URL as curl makes it (no credential unless given,
 * no headers added: fetch would add `Cache-Control: no-cache` to a
 * conditional request). The answer is read as soon as it arrives, even when
 * the server refuses an upload before it was sent whole.
 */
function blob(
  method: string,
  url: string,
  init: { body?: Uint8Array | string; headers?: Record<string, string>; pathAsIs?: string } = {},
): Promise<BlobAnswer> {
  return new Promise((resolve, reject) => {
    // pathAsIs: sent as given (as `curl --path-as-is`), where URL parsing would remove `.` and `%2E` segments.
    const req = httpRequest(
      url,
      { method, headers: init.headers, ...(init.pathAsIs ? { path: init.pathAsIs } : {}) },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const bytes = Buffer.concat(chunks);
          const json = /^application\/json/.test(res.headers["content-type"] ?? "") && bytes.length > 0;
          resolve({
            status: res.statusCode!,
            headers: res.headers,
            bytes,
            body: json ? JSON.parse(bytes.toString("utf8")) : undefined,
          });
        });
        res.on("error", reject);
      },
    );
    req.on("error", () => {}); // the server may close while the body is still going: the answer is what counts
    req.end(init.body);
  });
}

/** expectError for a blob answer. */
const expectBlobError = (answer: BlobAnswer, status: number, type: string) =>
  expectError(
    { status: answer.status, body: answer.body, headers: new Headers(answer.headers as Record<string, string>) },
    status,
    type,
  );

/** Every file under a directory, as paths relative to it. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => `${e.parentPath}/${e.name}`.slice(dir.length + 1));
}

/** The token of a Loom blob URL, taken apart: header, claims and signature (a JWS). */
function tokenParts(url: string) {
  const at = url.indexOf("/blobs/") + "/blobs/".length;
  const [header, payload, signature] = url.slice(at).split(".") as [string, string, string];
  const decode = (part: string) => JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  return {
    header: decode(header),
    claims: decode(payload),
    /** The URL with the token's header and claims changed, its signature kept. */
    with: (change: { header?: Record<string, unknown>; claims?: Record<string, unknown>; signature?: string }) =>
      `${url.slice(0, at)}${encode({ ...decode(header), ...change.header })}.${encode({ ...decode(payload), ...change.claims })}.${change.signature ?? signature}`,
  };
}

describe.each(storeKinds("storage over HTTP"))("storage over HTTP (%s store)", (store) => {
  let stack: TestStack;
  let admin: ApiClient;
  let stranger: ApiClient;
  let adminUserId: string;
  let orgId: string;

  beforeAll(async () => {
    stack = await startStack(store, { storage: { ASSET_MAX_BYTES: maxAssetBytes } });
    ({ admin, stranger, adminUserId, orgId } = await organizationClients(stack, `storage-stranger-${store}`));
  });
  afterAll(() => stack?.close());

  const newBucket = async (name = "bucket") =>
    bucketSchema.parse((await admin.post("/buckets", { name })).body).bucket_id;
  const newAsset = async (bucketId: string, name: string) => {
    const res = await admin.put(`/buckets/${bucketId}/assets`, { name });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return assetSchema.parse(res.body);
  };
  const assetUrl = async (bucketId: string, name: string, operation?: "PUT" | "GET") => {
    const res = await admin.post(`/buckets/${bucketId}/asset-urls/${name}`, operation ? { operation } : undefined);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return assetUrlSchema.parse(res.body).url;
  };
  /** Creates the asset and uploads `bytes` to it through a signed URL. */
  const upload = async (
    bucketId: string,
    name: string,
    bytes: Uint8Array | string,
    contentType = "application/octet-stream",
  ) => {
    await newAsset(bucketId, name);
    const res = await blob("PUT", await assetUrl(bucketId, name, "PUT"), {
      body: bytes,
      headers: { "content-type": contentType },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  };
  const countBuckets = async () => (await admin.get("/buckets")).body.pagination.total_count as number;
  const countAssets = async (bucketId: string) =>
    (await admin.get(`/buckets/${bucketId}/assets`)).body.pagination.total_count as number;

  describe("buckets", () => {
    it("creates, reads, renames, lists and deletes a bucket, in the public shape", async () => {
      const created = await admin.post("/buckets", { name: "Reports" });
      expect(created.status).toBe(201);
      const bucket = bucketSchema.parse(created.body);
      expect(bucket).toMatchObject({ name: "Reports", organization_id: orgId, created_by: adminUserId });
      expect(bucket.created_at).toBe(bucket.updated_at);

      const got = await admin.get(`/api/buckets/${bucket.bucket_id.toUpperCase()}`);
      expect([got.status, got.body]).toEqual([200, bucket]);

      const renamed = await admin.patch(`/buckets/${bucket.bucket_id}`, { name: "Reports 2026" });
      expect(renamed.status).toBe(200);
      expect(bucketSchema.parse(renamed.body)).toMatchObject({
        bucket_id: bucket.bucket_id,
        name: "Reports 2026",
        created_at: bucket.created_at,
      });
      expect(renamed.body.updated_at >= bucket.updated_at).toBe(true);
      const untouched = await admin.patch(`/buckets/${bucket.bucket_id}`);
      expect([untouched.status, untouched.body]).toEqual([200, renamed.body]);
      expect((await admin.patch(`/buckets/${bucket.bucket_id}`, { name: null })).body).toEqual(renamed.body);

      const list = bucketListSchema.parse((await admin.get("/buckets")).body);
      expect(list.buckets[0]).toEqual(renamed.body);

      expect((await admin.delete(`/buckets/${bucket.bucket_id}`)).status).toBe(204);
      expectError(await admin.get(`/buckets/${bucket.bucket_id}`), 404, "NotFound");
      expectError(await admin.delete(`/buckets/${bucket.bucket_id}`), 404, "NotFound");
      expect((await admin.get("/buckets")).body.buckets.map((b: any) => b.bucket_id)).not.toContain(bucket.bucket_id);
    });

    it.each([
      [0, false],
      [1, true],
      [256, true],
      [257, false],
    ])("a name of %i characters: ok=%s, on create and rename", async (length, ok) => {
      const before = await countBuckets();
      const name = "😀".repeat(length); // characters, not UTF-16 units
      const created = await admin.post("/buckets", { name });
      const bucketId = ok ? bucketSchema.parse(created.body).bucket_id : await newBucket("to rename");
      if (ok) expect(created.status).toBe(201);
      else
        expect(expectError(created, 400, "ValidationError").errors).toEqual([
          { path: "body.name", message: expect.any(String) },
        ]);
      expect(await countBuckets()).toBe(before + 1);
      const renamed = await admin.patch(`/buckets/${bucketId}`, { name });
      if (ok) expect(renamed.body.name).toBe(name);
      else {
        expect(expectError(renamed, 400, "ValidationError").errors).toEqual([
          { path: "body.name", message: expect.any(String) },
        ]);
        expect((await admin.get(`/buckets/${bucketId}`)).body.name).toBe("to rename");
      }
    });

    it("refuses names with control characters, wrong types and malformed ids", async () => {
      expectError(await admin.post("/buckets", { name: "tab\there" }), 400, "ValidationError");
      expectError(await admin.post("/buckets", { name: 7 }), 400, "ValidationError");
      expectError(await admin.post("/buckets"), 400, "ValidationError");
      expect(expectError(await admin.get("/buckets/not-a-uuid"), 400, "ValidationError").errors).toEqual([
        { path: "path.bucket_id", message: "must be a uuid" },
      ]);
      expectError(await admin.get(`/buckets/${crypto.randomUUID()}`), 404, "NotFound");
    });

    it("pages newest first", async () => {
      const org = apiClient(stack.gatewayUrl, await signAccessToken({ sub: `storage-pager-${store}` }));
      const ids: string[] = [];
      for (const name of ["one", "two", "three"]) ids.push((await org.post("/buckets", { name })).body.bucket_id);
      const first = bucketListSchema.parse((await org.get("/buckets?page_size=2")).body);
      expect(first.buckets.map((b) => b.bucket_id)).toEqual([ids[2], ids[1]]);
      expect(first.pagination).toEqual({ page_number: 1, page_size: 2, total_count: 3, total_pages: 2, next_page: 2 });
      const second = bucketListSchema.parse((await org.get("/buckets?page_size=2&page=2")).body);
      expect(second.buckets.map((b) => b.bucket_id)).toEqual([ids[0]]);
      expect(second.pagination).toEqual({
        page_number: 2,
        page_size: 2,
        total_count: 3,
        total_pages: 2,
        previous_page: 1,
      });
      expect(expectError(await org.get("/buckets?page_size=101"), 400, "ValidationError").errors[0]!.path).toBe(
        "query.page_size",
      );
    });

    it("hides another organization's bucket, its assets and its URLs (404, never 403)", async () => {
      const bucketId = await newBucket("private");
      await upload(bucketId, "secret.txt", "mine");
      const asset = "/buckets/" + bucketId;
      for (const res of [
        await stranger.get(asset),
        await stranger.patch(asset, { name: "theirs" }),
        await stranger.delete(asset),
        await stranger.get(`${asset}/assets`),
        await stranger.put(`${asset}/assets`, { name: "planted.txt" }),
        await stranger.get(`${asset}/assets/secret.txt?include_contents=true`),
        await stranger.delete(`${asset}/assets/secret.txt`),
        await stranger.post(`${asset}/asset-urls/secret.txt`),
        await stranger.post(`${asset}/asset-urls/secret.txt`, { operation: "GET" }),
      ]) {
        expectError(res, 404, "NotFound");
      }
      expect((await stranger.get("/buckets")).body.buckets).toEqual([]);
      expect((await admin.get(asset)).body.name).toBe("private");
      expect((await admin.get(`${asset}/assets`)).body.assets.map((a: any) => a.name)).toEqual(["secret.txt"]);
    });

    it("deleting a bucket deletes its assets, their bytes, and every URL to them", async () => {
      const bucketId = await newBucket("doomed");
      await upload(bucketId, "a.txt", "aaa");
      await upload(bucketId, "dir/b.bin", new Uint8Array([1, 2, 3]));
      const getUrl = await assetUrl(bucketId, "a.txt", "GET");
      const bothUrl = await assetUrl(bucketId, "dir/b.bin");
      expect((await blob("GET", getUrl)).status).toBe(200);
      expect((await filesUnder(stack.blobDir)).filter((f) => f.includes(bucketId))).toHaveLength(2);

      expect((await admin.delete(`/buckets/${bucketId}`)).status).toBe(204);
      expectBlobError(await blob("GET", getUrl), 404, "NotFound");
      expectBlobError(await blob("GET", bothUrl), 404, "NotFound");
      expectBlobError(await blob("PUT", bothUrl, { body: "back again" }), 404, "NotFound");
      expectError(await admin.get(`/buckets/${bucketId}/assets/a.txt`), 404, "NotFound");
      expectError(await admin.get(`/buckets/${bucketId}/assets`), 404, "NotFound");
      await expect.poll(async () => (await filesUnder(stack.blobDir)).filter((f) => f.includes(bucketId))).toEqual([]);
    });
  });

  describe("assets", () => {
    let bucketId: string;
    beforeAll(async () => {
      bucketId = await newBucket("assets");
    });

    it("CreateAsset is an upsert: 201 both times, the same asset", async () => {
      const first = await admin.put(`/buckets/${bucketId}/assets`, { name: "notes/upsert.txt" });
      expect(first.status).toBe(201);
      const asset = assetSchema.parse(first.body);
      expect(asset).toEqual({
        name: "notes/upsert.txt",
        organization_id: orgId,
        bucket_id: bucketId,
        created_at: asset.created_at,
        created_by: adminUserId,
        updated_at: asset.created_at,
      });
      const before = await countAssets(bucketId);
      const again = await admin.put(`/api/buckets/${bucketId}/assets`, { name: "notes/upsert.txt" });
      expect([again.status, again.body]).toEqual([201, asset]);
      expect(await countAssets(bucketId)).toBe(before);
    });

    it.each([
      [0, false],
      [1, true],
      [256, true],
      [257, false],
    ])("a name of %i characters: ok=%s", async (length, ok) => {
      const before = await countAssets(bucketId);
      const name = "é".repeat(length);
      const res = await admin.put(`/buckets/${bucketId}/assets`, { name });
      if (ok) {
        expect(res.status).toBe(201);
        expect((await admin.get(`/buckets/${bucketId}/assets/${encodeURIComponent(name)}`)).body.name).toBe(name);
      } else {
        expect(expectError(res, 400, "ValidationError").errors).toEqual([
          { path: "body.name", message: expect.any(String) },
        ]);
        expect(await countAssets(bucketId)).toBe(before);
        if (length > 0)
          expect(
            expectError(
              await admin.get(`/buckets/${bucketId}/assets/${encodeURIComponent(name)}`),
              400,
              "ValidationError",
            ).errors[0]!.path,
          ).toBe("path.name");
      }
    });

    it.each([
      ["a `..` segment", "../up.txt"],
      ["a `..` segment inside", "dir/../up.txt"],
      ["a `..` segment at the end", "dir/.."],
      ["a `.` segment inside", "a/./b"],
      ["a leading `.` segment", "./x"],
      ["only a `.` segment", "."],
      ["a `.` segment at the end", "dir/."],
      ["an empty segment", "a//b"],
      ["a trailing /", "dir/"],
      ["a backslash", "dir\\file.txt"],
      ["a control character", "bell\u0007.txt"],
      ["a newline", "line\nbreak.txt"],
      ["a leading /", "/rooted.txt"],
    ])("refuses a name with %s, in the body and in paths, and stores nothing", async (_, name) => {
      const before = await countAssets(bucketId);
      expect(
        expectError(await admin.put(`/buckets/${bucketId}/assets`, { name }), 400, "ValidationError").errors,
      ).toEqual([{ path: "body.name", message: expect.any(String) }]);
      expect(await countAssets(bucketId)).toBe(before);
      // Sent as is, dots encoded: a client would remove a `.` segment before sending (the aliasing refused here).
      const encoded = encodeURIComponent(name).replaceAll(".", "%2E");
      const asIs = (method: string, path: string) =>
        blob(method, stack.gatewayUrl, { pathAsIs: path, headers: { authorization: `Bearer ${stack.bootstrapKey}` } });
      for (const res of [
        await asIs("GET", `/buckets/${bucketId}/assets/${encoded}`),
        await asIs("DELETE", `/buckets/${bucketId}/assets/${encoded}`),
        await asIs("POST", `/buckets/${bucketId}/asset-urls/${encoded}`),
      ]) {
        expect(expectBlobError(res, 400, "ValidationError").errors).toEqual([
          { path: "path.name", message: expect.any(String) },
        ]);
      }
    });

    it("takes the rest of the path as the name, raw or percent-encoded", async () => {
      await upload(bucketId, "deep/dir/file.txt", "deep text", "text/plain");
      const raw = await admin.get(`/buckets/${bucketId}/assets/deep/dir/file.txt?include_contents=true`);
      expect(raw.status).toBe(200);
      expect(raw.body).toMatchObject({ name: "deep/dir/file.txt", size: 9, contents: "deep text" });
      const encoded = await admin.get(`/buckets/${bucketId}/assets/deep%2Fdir%2Ffile.txt?include_contents=true`);
      expect(encoded.body).toEqual(raw.body);
      expect((await admin.get(`/api/buckets/${bucketId}/assets/deep/dir%2Ffile.txt`)).body.name).toBe(
        "deep/dir/file.txt",
      );
      // A name that looks like another route's path is still a name.
      await newAsset(bucketId, "asset-urls/x");
      expect((await admin.get(`/buckets/${bucketId}/assets/asset-urls/x`)).body.name).toBe("asset-urls/x");

      const rawUrl = await assetUrl(bucketId, "deep/dir/file.txt", "GET");
      const encodedUrl = (
        await admin.post(`/buckets/${bucketId}/asset-urls/deep%2Fdir%2Ffile.txt`, { operation: "GET" })
      ).body.url;
      expect((await blob("GET", rawUrl)).bytes.toString()).toBe("deep text");
      expect((await blob("GET", encodedUrl)).bytes.toString()).toBe("deep text");

      await upload(bucketId, "gone/one.txt", "1");
      await upload(bucketId, "gone/two.txt", "2");
      expect((await admin.delete(`/buckets/${bucketId}/assets/gone/one.txt`)).status).toBe(204);
      expect((await admin.delete(`/buckets/${bucketId}/assets/gone%2Ftwo.txt`)).status).toBe(204);
      expectError(await admin.get(`/buckets/${bucketId}/assets/gone/one.txt`), 404, "NotFound");
      expectError(await admin.get(`/buckets/${bucketId}/assets/gone/two.txt`), 404, "NotFound");
    });

    it("answers 405 with Allow on the asset paths, and OPTIONS with Allow", async () => {
      expectError(await admin.put(`/buckets/${bucketId}/assets/some/name.txt`, { name: "x" }), 405, "MethodNotAllowed");
      const res = await fetch(`${stack.gatewayUrl}/buckets/${bucketId}/assets/some/name.txt`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${stack.bootstrapKey}` },
      });
      expect([res.status, res.headers.get("allow")]).toEqual([405, "HEAD, GET, DELETE"]);
      const list = await fetch(`${stack.gatewayUrl}/buckets/${bucketId}/assets`, {
        method: "POST",
        headers: { authorization: `Bearer ${stack.bootstrapKey}` },
      });
      expect([list.status, list.headers.get("allow")]).toEqual([405, "HEAD, GET, PUT"]);
      const urls = await fetch(`${stack.gatewayUrl}/buckets/${bucketId}/asset-urls/a/b`, {
        method: "GET",
        headers: { authorization: `Bearer ${stack.bootstrapKey}` },
      });
      expect([urls.status, urls.headers.get("allow")]).toEqual([405, "POST"]);
      const options = await fetch(`${stack.gatewayUrl}/buckets/${bucketId}/assets/a/b`, {
        method: "OPTIONS",
        headers: { authorization: `Bearer ${stack.bootstrapKey}` },
      });
      expect([options.status, options.headers.get("allow")]).toEqual([204, "HEAD, GET, DELETE"]);
    });

    it("shows the size and the update of an upload", async () => {
      const created = await newAsset(bucketId, "sized.bin");
      expect(created).not.toHaveProperty("size");
      await blob("PUT", await assetUrl(bucketId, "sized.bin"), { body: new Uint8Array(1234) });
      const after = assetSchema.parse((await admin.get(`/buckets/${bucketId}/assets/sized.bin`)).body);
      expect(after).toMatchObject({ size: 1234, created_at: created.created_at });
      expect(after.updated_at > created.updated_at).toBe(true);
      expect(after).not.toHaveProperty("contents");
    });

    it("include_contents: UTF-8 text as a string, other bytes in base64, nothing before an upload", async () => {
      const text = "\uFEFFhéllo wörld 😀\n\u0000 still text"; // a byte-order mark is kept, as sent
      await upload(bucketId, "contents/text.txt", text, "text/plain; charset=utf-8");
      const asText = await admin.get(`/buckets/${bucketId}/assets/contents/text.txt?include_contents=true`);
      expect(assetSchema.parse(asText.body).contents).toBe(text);

      const bytes = new Uint8Array([0xff, 0xfe, 0x00, 0x80, 0x41, 0xc3]); // not UTF-8
      await upload(bucketId, "contents/binary.bin", bytes);
      const asBinary = assetSchema.parse(
        (await admin.get(`/buckets/${bucketId}/assets/contents/binary.bin?include_contents=true`)).body,
      );
      expect(asBinary.contents).toEqual({ encoding: "base64", data: Buffer.from(bytes).toString("base64") });
      expect(asBinary.size).toBe(6);

      await upload(bucketId, "contents/empty.txt", "");
      expect(
        (await admin.get(`/buckets/${bucketId}/assets/contents/empty.txt?include_contents=true`)).body,
      ).toMatchObject({ size: 0, contents: "" });

      expect(
        (await admin.get(`/buckets/${bucketId}/assets/contents/text.txt?include_contents=false`)).body,
      ).not.toHaveProperty("contents");
      expect((await admin.get(`/buckets/${bucketId}/assets/contents/text.txt`)).body).not.toHaveProperty("contents");
      await newAsset(bucketId, "contents/never.txt");
      const never = (await admin.get(`/buckets/${bucketId}/assets/contents/never.txt?include_contents=true`)).body;
      expect(never).not.toHaveProperty("contents");
      expect(never).not.toHaveProperty("size");
      expect(
        expectError(
          await admin.get(`/buckets/${bucketId}/assets/contents/text.txt?include_contents=yes`),
          400,
          "ValidationError",
        ).errors[0]!.path,
      ).toBe("query.include_contents");
    });

    it("include_contents over 1 MiB is 400; exactly 1 MiB is answered", async () => {
      const mib = 1024 * 1024;
      await upload(bucketId, "big/exact.txt", "x".repeat(mib));
      expect(
        ((await admin.get(`/buckets/${bucketId}/assets/big/exact.txt?include_contents=true`)).body.contents as string)
          .length,
      ).toBe(mib);
      await upload(bucketId, "big/over.txt", "x".repeat(mib + 1));
      const over = expectError(
        await admin.get(`/buckets/${bucketId}/assets/big/over.txt?include_contents=true`),
        400,
        "ValidationError",
      );
      expect(over.errors).toEqual([{ path: "query.include_contents", message: expect.any(String) }]);
      expect((await admin.get(`/buckets/${bucketId}/assets/big/over.txt`)).body.size).toBe(mib + 1);
    });

    it("lists newest first, pages, and filters by prefix and postfix, echoing them", async () => {
      const listed = await newBucket("listing");
      for (const name of ["docs/a.md", "docs/b.txt", "img/c.png", "docs/d.md", "readme.md"])
        await newAsset(listed, name);
      const all = assetListSchema.parse((await admin.get(`/buckets/${listed}/assets`)).body);
      expect(all.assets.map((a) => a.name)).toEqual(["readme.md", "docs/d.md", "img/c.png", "docs/b.txt", "docs/a.md"]);
      expect(all).not.toHaveProperty("prefix");
      expect(all).not.toHaveProperty("postfix");

      const page2 = assetListSchema.parse((await admin.get(`/buckets/${listed}/assets?page=2&page_size=2`)).body);
      expect(page2.assets.map((a) => a.name)).toEqual(["img/c.png", "docs/b.txt"]);
      expect(page2.pagination).toEqual({
        page_number: 2,
        page_size: 2,
        total_count: 5,
        total_pages: 3,
        next_page: 3,
        previous_page: 1,
      });

      const docs = assetListSchema.parse((await admin.get(`/buckets/${listed}/assets?prefix=docs/`)).body);
      expect([docs.assets.map((a) => a.name), docs.prefix, docs.pagination.total_count]).toEqual([
        ["docs/d.md", "docs/b.txt", "docs/a.md"],
        "docs/",
        3,
      ]);
      const md = assetListSchema.parse((await admin.get(`/buckets/${listed}/assets?postfix=.md`)).body);
      expect([md.assets.map((a) => a.name), md.postfix]).toEqual([["readme.md", "docs/d.md", "docs/a.md"], ".md"]);
      const both = assetListSchema.parse(
        (await admin.get(`/buckets/${listed}/assets?prefix=docs%2F&postfix=.md&page_size=1`)).body,
      );
      expect(both).toMatchObject({ prefix: "docs/", postfix: ".md", pagination: { total_count: 2, total_pages: 2 } });
      expect(both.assets.map((a) => a.name)).toEqual(["docs/d.md"]);
      const none = assetListSchema.parse((await admin.get(`/buckets/${listed}/assets?prefix=zzz`)).body);
      expect([none.assets, none.pagination.total_count]).toEqual([[], 0]);
    });

    it("DeleteAsset removes the asset and its bytes; its URLs stop working", async () => {
      await upload(bucketId, "delete/me.txt", "bye");
      const url = await assetUrl(bucketId, "delete/me.txt", "GET");
      const filesBefore = (await filesUnder(stack.blobDir)).length;
      expect((await admin.delete(`/buckets/${bucketId}/assets/delete/me.txt`)).status).toBe(204);
      expectError(await admin.get(`/buckets/${bucketId}/assets/delete/me.txt`), 404, "NotFound");
      expectError(await admin.delete(`/buckets/${bucketId}/assets/delete/me.txt`), 404, "NotFound");
      expectBlobError(await blob("GET", url), 404, "NotFound");
      expect((await filesUnder(stack.blobDir)).length).toBe(filesBefore - 1);
      // A new asset of that name starts empty: the old bytes never come back.
      await newAsset(bucketId, "delete/me.txt");
      expectBlobError(await blob("GET", url), 404, "NotFound");
    });

    it("CreateAssetUrl needs an existing asset, and a known operation", async () => {
      expectError(await admin.post(`/buckets/${bucketId}/asset-urls/nothing-here.txt`), 404, "NotFound");
      await newAsset(bucketId, "op.txt");
      expect(
        expectError(
          await admin.post(`/buckets/${bucketId}/asset-urls/op.txt`, { operation: "DELETE" }),
          400,
          "ValidationError",
        ).errors[0]!.path,
      ).toBe("body.operation");
    });
  });

  describe("signed URLs", () => {
    let bucketId: string;
    beforeAll(async () => {
      bucketId = await newBucket("urls");
    });

    it("a bodiless CreateAssetUrl gives one URL for PUT and GET, on Loom, needing no bearer; Content-Type round trips", async () => {
      await newAsset(bucketId, "trip/report.json");
      const res = await admin.post(`/buckets/${bucketId}/asset-urls/trip/report.json`);
      expect(res.status).toBe(200);
      const { url, headers, expires_at } = assetUrlSchema.parse(res.body);
      expect(url.startsWith(`${stack.gatewayUrl}/blobs/`)).toBe(true);
      expect(headers).toEqual({});
      const ttl = Date.parse(expires_at) - Date.now();
      expect(ttl).toBeGreaterThan(14 * 60_000);
      expect(ttl).toBeLessThanOrEqual(15 * 60_000);

      const bytes = Buffer.from(JSON.stringify({ hello: "world", n: [1, 2, 3] }));
      const put = await blob("PUT", url, { body: bytes, headers: { "content-type": "application/json" } });
      expect(put.status).toBe(200);
      const got = await blob("GET", url);
      expect(got.status).toBe(200);
      expect(sha256(got.bytes)).toBe(sha256(bytes));
      expect(got.headers["content-type"]).toBe("application/json");
      expect(got.headers["content-length"]).toBe(String(bytes.length));
      expect(got.headers["etag"]).toMatch(/^"[^"]+"$/);
      expect(got.headers["x-request-id"]).toBeTruthy();
      // Under the compat prefix too, and a bearer that means nothing is not looked at.
      const alias = await blob("GET", url.replace("/blobs/", "/api/blobs/"), {
        headers: { authorization: "Bearer not-a-credential" },
      });
      expect(sha256(alias.bytes)).toBe(sha256(bytes));
    });

    it("uploads without Content-Type are octet-stream; a new upload replaces the bytes and the ETag", async () => {
      await newAsset(bucketId, "replace.bin");
      const url = await assetUrl(bucketId, "replace.bin");
      await blob("PUT", url, { body: new Uint8Array([1, 2, 3]) });
      const first = await blob("GET", url);
      expect(first.headers["content-type"]).toBe("application/octet-stream");
      await blob("PUT", url, { body: "second", headers: { "content-type": "text/plain" } });
      const second = await blob("GET", url);
      expect([second.bytes.toString(), second.headers["content-type"]]).toEqual(["second", "text/plain"]);
      expect(second.headers["etag"]).not.toBe(first.headers["etag"]);
    });

    it("streams a chunked upload with no Content-Length", async () => {
      await newAsset(bucketId, "chunked.bin");
      const url = await assetUrl(bucketId, "chunked.bin");
      const chunk = new Uint8Array(64 * 1024).fill(9);
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent++ < 10) controller.enqueue(chunk);
          else controller.close();
        },
      });
      const res = await fetch(url, { method: "PUT", body, duplex: "half" } as RequestInit);
      expect(res.status).toBe(200);
      expect((await admin.get(`/buckets/${bucketId}/assets/chunked.bin`)).body.size).toBe(10 * chunk.length);
    });

    it("honours Range (206 with Content-Range) and If-None-Match (304); HEAD has the headers and no body", async () => {
      await upload(bucketId, "range.txt", "0123456789", "text/plain");
      const url = await assetUrl(bucketId, "range.txt", "GET");
      const part = await blob("GET", url, { headers: { range: "bytes=2-5" } });
      expect([
        part.status,
        part.bytes.toString(),
        part.headers["content-range"],
        part.headers["content-length"],
      ]).toEqual([206, "2345", "bytes 2-5/10", "4"]);
      const tail = await blob("GET", url, { headers: { range: "bytes=-3" } });
      expect([tail.status, tail.bytes.toString()]).toEqual([206, "789"]);
      const unsatisfiable = await blob("GET", url, { headers: { range: "bytes=50-60" } });
      expect([unsatisfiable.status, unsatisfiable.headers["content-range"]]).toEqual([416, "bytes */10"]);

      const whole = await blob("GET", url);
      const etag = whole.headers["etag"]!;
      const notModified = await blob("GET", url, { headers: { "if-none-match": etag } });
      expect([notModified.status, notModified.bytes.length, notModified.headers["etag"]]).toEqual([304, 0, etag]);
      expect((await blob("GET", url, { headers: { "if-none-match": '"something-else"' } })).status).toBe(200);
      // fetch() sends Cache-Control: no-cache with every conditional request; If-None-Match still holds.
      expect((await fetch(url, { headers: { "if-none-match": etag! } })).status).toBe(304);

      const head = await blob("HEAD", url);
      expect([head.status, head.bytes.length, head.headers["content-length"], head.headers["etag"]]).toEqual([
        200,
        0,
        "10",
        etag,
      ]);
    });

    it("a URL for one operation refuses the other with 403, and changes nothing", async () => {
      await upload(bucketId, "ops.txt", "original");
      const getOnly = await assetUrl(bucketId, "ops.txt", "GET");
      const putOnly = await assetUrl(bucketId, "ops.txt", "PUT");
      expectBlobError(await blob("PUT", getOnly, { body: "overwritten" }), 403, "Forbidden");
      expectBlobError(await blob("GET", putOnly), 403, "Forbidden");
      expect((await blob("HEAD", putOnly)).status).toBe(403);
      expect((await blob("GET", getOnly)).bytes.toString()).toBe("original");
    });

    it("a tampered token is 403 whatever field changed, and never says whether the asset exists", async () => {
      await upload(bucketId, "a.txt", "asset A");
      await upload(bucketId, "b.txt", "asset B");
      const url = await assetUrl(bucketId, "a.txt");
      const token = tokenParts(url);
      expect(Object.keys(token.claims).sort()).toEqual(["aid", "bkt", "exp", "ops", "org"]);
      const otherBucket = await newBucket("other");
      await upload(otherBucket, "a.txt", "other bucket's A");
      const tampered = {
        "the asset (another id)": token.with({ claims: { aid: crypto.randomUUID() } }),
        "the asset, by name (as tokens once named it)": token.with({ claims: { aid: undefined, ast: "b.txt" } }),
        "the bucket": token.with({ claims: { bkt: otherBucket } }),
        "the organization": token.with({ claims: { org: crypto.randomUUID() } }),
        "the operations": tokenParts(await assetUrl(bucketId, "a.txt", "GET")).with({ claims: { ops: "PUT,GET" } }),
        "the expiry": token.with({ claims: { exp: token.claims.exp + 3600 } }),
        "the header": token.with({ header: { typ: "JWT" } }),
        "the algorithm": token.with({ header: { alg: "none" }, signature: "" }),
        "the signature": token.with({ signature: Buffer.alloc(32, 1).toString("base64url") }),
        "everything (garbage)": `${stack.gatewayUrl}/blobs/garbage`,
        "nothing (no token)": `${stack.gatewayUrl}/blobs/`,
      };
      const answers = [];
      for (const [field, bad] of Object.entries(tampered)) {
        const get = await blob("GET", bad);
        const put = await blob("PUT", bad, { body: "planted" });
        answers.push(expectBlobError(get, 403, "Forbidden").errors, expectBlobError(put, 403, "Forbidden").errors);
        expect(field).toBeTruthy();
      }
      expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1); // one answer for every kind of bad token
      expect((await blob("GET", url)).bytes.toString()).toBe("asset A");
      expect((await admin.get(`/buckets/${bucketId}/assets/b.txt?include_contents=true`)).body.contents).toBe(
        "asset B",
      );
      expect((await admin.get(`/buckets/${otherBucket}/assets/a.txt?include_contents=true`)).body.contents).toBe(
        "other bucket's A",
      );
    });

    it("an old URL neither reads nor writes a new asset of the same name: deleting the asset revokes it", async () => {
      await upload(bucketId, "recreated.txt", "first life");
      const oldUrl = await assetUrl(bucketId, "recreated.txt");
      expect((await admin.delete(`/buckets/${bucketId}/assets/recreated.txt`)).status).toBe(204);
      await upload(bucketId, "recreated.txt", "second life");
      expectBlobError(await blob("GET", oldUrl), 404, "NotFound");
      expectBlobError(await blob("PUT", oldUrl, { body: "planted through a leaked URL" }), 404, "NotFound");
      expect((await admin.get(`/buckets/${bucketId}/assets/recreated.txt?include_contents=true`)).body).toMatchObject({
        contents: "second life",
        size: 11,
      });
      expect((await blob("GET", await assetUrl(bucketId, "recreated.txt", "GET"))).bytes.toString()).toBe(
        "second life",
      );
    });

    it("refuses an upload on a bad token at once, and closes the connection rather than read the rest", async () => {
      const big = Buffer.alloc(64 * 1024 * 1024, 3);
      const refused = await blob("PUT", `${stack.gatewayUrl}/blobs/not-a-token`, {
        body: big,
        headers: { "content-length": String(big.length) },
      });
      expectBlobError(refused, 403, "Forbidden");
      expect(refused.headers.connection).toBe("close");
    });

    it("a URL before any upload reads as 404", async () => {
      await newAsset(bucketId, "empty-yet.txt");
      expectBlobError(await blob("GET", await assetUrl(bucketId, "empty-yet.txt", "GET")), 404, "NotFound");
    });

    it("an upload over the largest asset allowed is 413 and keeps the old bytes, with or without Content-Length", async () => {
      await upload(bucketId, "limit.bin", "small");
      const url = await assetUrl(bucketId, "limit.bin", "PUT");
      const tooBig = Buffer.alloc(maxAssetBytes + 1, 1);
      expectBlobError(
        await blob("PUT", url, { body: tooBig, headers: { "content-length": String(tooBig.length) } }),
        413,
        "PayloadTooLarge",
      );
      expectBlobError(
        await blob("PUT", url, { body: tooBig, headers: { "transfer-encoding": "chunked" } }),
        413,
        "PayloadTooLarge",
      );
      expect((await admin.get(`/buckets/${bucketId}/assets/limit.bin?include_contents=true`)).body).toMatchObject({
        size: 5,
        contents: "small",
      });
      const exactly = Buffer.alloc(maxAssetBytes, 2);
      expect((await blob("PUT", url, { body: exactly })).status).toBe(200);
      expect((await admin.get(`/buckets/${bucketId}/assets/limit.bin`)).body.size).toBe(maxAssetBytes);
    });

    it("blob paths answer 405 with Allow for other methods, and OPTIONS with Allow", async () => {
      const url = `${stack.gatewayUrl}/blobs/anything`;
      const deleted = await blob("DELETE", url);
      expectBlobError(deleted, 405, "MethodNotAllowed");
      expect(deleted.headers["allow"]).toBe("GET, HEAD, PUT");
      const post = await fetch(url, { method: "POST", body: "x" });
      expect([post.status, post.headers.get("allow")]).toEqual([405, "GET, HEAD, PUT"]);
      const options = await blob("OPTIONS", url);
      expect([options.status, options.headers["allow"]]).toEqual([204, "GET, HEAD, PUT"]);
    });
  });
});

describe("signed URLs expire", () => {
  let stack: TestStack;
  let admin: ApiClient;
  beforeAll(async () => {
    // Tokens count whole seconds: 2 s leaves at least one for the first use.
    stack = await startStack("sqlite", { storage: { ASSET_URL_TTL_SECONDS: 2 } });
    admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
  });
  afterAll(() => stack?.close());

  it("works until expires_at, then is 403", async () => {
    const bucketId = (await admin.post("/buckets", { name: "short" })).body.bucket_id;
    await admin.put(`/buckets/${bucketId}/assets`, { name: "brief.txt" });
    const res = assetUrlSchema.parse((await admin.post(`/buckets/${bucketId}/asset-urls/brief.txt`)).body);
    expect(Date.parse(res.expires_at) - Date.now()).toBeLessThanOrEqual(2000);
    expect((await blob("PUT", res.url, { body: "for a moment" })).status).toBe(200);
    await expect.poll(async () => (await blob("GET", res.url)).status, { timeout: 5000, interval: 100 }).toBe(403);
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(res.expires_at) - 1000);
    expectBlobError(await blob("GET", res.url), 403, "Forbidden");
    expectBlobError(await blob("PUT", res.url, { body: "too late" }), 403, "Forbidden");
  });
});
