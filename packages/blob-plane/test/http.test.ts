import { createHash, randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { Code, ConnectError } from "@connectrpc/connect";
import { fieldViolationsOf, invalidArgument } from "@loom/contracts/errors";
import { type RunningServer, startRpcServer } from "@loom/server/rpc-server";
import { createLogger } from "@loom/telemetry/logger";
import { within } from "@loom/testing/within";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BlobRequest, ServeBlob } from "../src/exchange.ts";
import { blobPathPrefix } from "../src/exchange.ts";
import { blobHttpHandler, remoteBlobs } from "../src/http.ts";

const serviceToken = "blob-test-service-token-0123456789";
const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** Resolves when the signal aborts. */
const abortedOf = (signal: AbortSignal) =>
  new Promise<void>((resolve) =>
    signal.aborted ? resolve() : signal.addEventListener("abort", () => resolve(), { once: true }),
  );

/** A stream of `bytes` in 64 KiB chunks, as a socket would deliver them. */
const chunked = (bytes: Buffer) =>
  Readable.from(
    (function* () {
      for (let at = 0; at < bytes.length; at += 65536) yield bytes.subarray(at, at + 65536);
    })(),
  );

async function readAll(body: Readable | undefined): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body ?? []) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe("the blob data plane over HTTP (blobHttpHandler + remoteBlobs)", () => {
  const download = randomBytes(5 * 1024 * 1024 + 123);
  const seen: BlobRequest[] = [];
  const abortedCalls: Array<Promise<void>> = [];
  const fake: ServeBlob = async (request) => {
    seen.push(request);
    const { token, method, signal } = request;
    if (token === "download") {
      return {
        status: 200,
        headers: { "content-length": String(download.length), "content-type": "application/x-test", etag: '"v1"' },
        body: method === "GET" ? chunked(download) : undefined,
      };
    }
    if (token === "upload") {
      const bytes = await readAll(request.body);
      return { status: 200, headers: { "x-sha256": sha256(bytes), "x-size": String(bytes.length) } };
    }
    if (token === "not-modified") return { status: 304, headers: { etag: '"v1"' } };
    if (token === "denied") throw new ConnectError("the token is not good for this", Code.PermissionDenied);
    if (token === "too-large") throw new ConnectError("the upload exceeds 10 bytes", Code.OutOfRange);
    if (token === "missing") throw new ConnectError("asset not found", Code.NotFound);
    if (token === "slow-down") throw new ConnectError("quota", Code.ResourceExhausted, { "retry-after": "7" });
    if (token === "bad-name") throw invalidArgument([{ path: "path.name", message: "must not contain a backslash" }]);
    if (token === "bug") throw new Error("driver exploded: secret detail");
    if (token === "hang") {
      abortedCalls.push(abortedOf(signal));
      return new Promise(() => {});
    }
    if (token === "endless") {
      abortedCalls.push(abortedOf(signal));
      const body = new Readable({
        read() {
          this.push(Buffer.alloc(65536, 7));
        },
      });
      return { status: 200, headers: { "content-type": "application/octet-stream" }, body };
    }
    throw new ConnectError("unknown token", Code.PermissionDenied);
  };

  let server: RunningServer;
  let blobs: ServeBlob;
  const call = (method: BlobRequest["method"], token: string, extra: Partial<BlobRequest> = {}) =>
    blobs({ method, token, headers: {}, signal: new AbortController().signal, ...extra });
  const rejection = async (promise: Promise<unknown>) => {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConnectError);
    return error as ConnectError;
  };

  beforeAll(async () => {
    const logger = createLogger("test", "silent");
    server = await startRpcServer({
      services: [
        {
          name: "blobs",
          routes: () => {},
          ready: async () => true,
          close: async () => {},
          http: { prefix: blobPathPrefix, handle: blobHttpHandler(fake, serviceToken, logger) },
        },
      ],
      serviceToken,
      logger,
    });
    blobs = remoteBlobs(server.url, serviceToken);
  });
  afterAll(() => server?.close());

  it("serves on a server that gives an upload all the time it needs to arrive", () => {
    expect(server.server.requestTimeout).toBe(0);
  });

  it("downloads a few MiB as a stream, byte for byte, with the answer's headers", async () => {
    const answer = await call("GET", "download");
    expect(answer.status).toBe(200);
    expect(answer.headers).toMatchObject({
      "content-length": String(download.length),
      "content-type": "application/x-test",
      etag: '"v1"',
    });
    expect(sha256(await readAll(answer.body))).toBe(sha256(download));
  });

  it("uploads a few MiB as a stream, byte for byte, with the caller's end-to-end headers and none of its credentials", async () => {
    const upload = randomBytes(4 * 1024 * 1024 + 7);
    const answer = await call("PUT", "upload", {
      body: chunked(upload),
      headers: {
        "content-type": "text/plain",
        "content-length": String(upload.length),
        authorization: "Bearer loom_secret",
        "x-loom-organization-id": "someone-else",
        connection: "keep-alive, x-hop",
        "x-hop": "1",
      },
    });
    expect(answer).toMatchObject({
      status: 200,
      headers: { "x-sha256": sha256(upload), "x-size": String(upload.length) },
    });
    const headers = seen.at(-1)!.headers;
    expect(headers).toMatchObject({ "content-type": "text/plain", "content-length": String(upload.length) });
    for (const name of ["authorization", "x-loom-organization-id", "x-loom-service-token", "x-hop"])
      expect(headers, name).not.toHaveProperty(name);
  });

  it("passes the token as it appears in the path", async () => {
    await call("GET", "download").then((a) => a.body?.destroy());
    await rejection(call("GET", "a.b%2Fc~d"));
    expect(seen.at(-1)!.token).toBe("a.b%2Fc~d");
    await rejection(call("GET", "é x"));
    expect(seen.at(-1)!.token).toBe("%C3%A9%20x");
  });

  it("answers HEAD and 304 without a body", async () => {
    expect(await call("HEAD", "download")).toMatchObject({
      status: 200,
      headers: { "content-length": String(download.length) },
      body: undefined,
    });
    expect(await call("GET", "not-modified")).toMatchObject({
      status: 304,
      headers: { etag: '"v1"' },
      body: undefined,
    });
  });

  it.each([
    ["denied", Code.PermissionDenied, "the token is not good for this"],
    ["too-large", Code.OutOfRange, "the upload exceeds 10 bytes"],
    ["missing", Code.NotFound, "asset not found"],
  ])("gives back the ConnectError the service raised (%s)", async (token, code, message) => {
    const error = await rejection(call("GET", token));
    expect([error.code, error.rawMessage]).toEqual([code, message]);
  });

  it("gives back an error to HEAD, which has no body, from Connect's status", async () => {
    const error = await rejection(call("HEAD", "denied"));
    expect(error.code).toBe(Code.PermissionDenied);
  });

  it("keeps an error's details and metadata", async () => {
    const invalid = await rejection(call("GET", "bad-name"));
    expect(invalid.code).toBe(Code.InvalidArgument);
    expect(fieldViolationsOf(invalid).map((v) => ({ path: v.path, message: v.message }))).toEqual([
      { path: "path.name", message: "must not contain a backslash" },
    ]);
    const exhausted = await rejection(call("GET", "slow-down"));
    expect([exhausted.code, exhausted.metadata.get("retry-after")]).toEqual([Code.ResourceExhausted, "7"]);
  });

  it("answers an unexpected failure as INTERNAL without its message", async () => {
    const error = await rejection(call("GET", "bug"));
    expect([error.code, error.rawMessage]).toEqual([Code.Internal, "internal error"]);
  });

  it("answers Connect's JSON error with Connect's status", async () => {
    const res = await fetch(`${server.url}${blobPathPrefix}denied`, {
      headers: { "x-loom-service-token": serviceToken },
    });
    expect([res.status, res.headers.get("content-type"), await res.json()]).toEqual([
      403,
      "application/json",
      { code: "permission_denied", message: "the token is not good for this" },
    ]);
  });

  it("refuses a caller without the service token, or with a wrong one", async () => {
    const count = seen.length;
    const res = await fetch(`${server.url}${blobPathPrefix}download`);
    expect([res.status, await res.json()]).toEqual([
      401,
      { code: "unauthenticated", message: "missing or wrong service token" },
    ]);
    const wrong = remoteBlobs(server.url, serviceToken.replace(/.$/, "X"));
    const error = await rejection(
      wrong({ method: "GET", token: "download", headers: {}, signal: new AbortController().signal }),
    );
    expect(error.code).toBe(Code.Unauthenticated);
    expect(seen.length).toBe(count);
  });

  it("refuses an upload before reading it, and the next exchange still works", async () => {
    const big = Buffer.alloc(64 * 1024 * 1024, 5);
    const error = await rejection(
      call("PUT", "denied", { body: chunked(big), headers: { "content-length": String(big.length) } }),
    );
    expect(error.code).toBe(Code.PermissionDenied);
    const upload = randomBytes(1000);
    expect((await call("PUT", "upload", { body: chunked(upload) })).headers["x-sha256"]).toBe(sha256(upload));
  });

  it("aborts the service's signal when the caller aborts before the answer", async () => {
    const abort = new AbortController();
    const pending = call("GET", "hang", { signal: abort.signal });
    await expect.poll(() => abortedCalls.length).toBe(1);
    abort.abort(new ConnectError("gone", Code.Canceled));
    expect((await rejection(pending)).code).toBe(Code.Canceled);
    await abortedCalls[0];
  });

  it("aborts the service's signal when the caller stops reading a download", async () => {
    const answer = await call("GET", "endless");
    await new Promise((resolve) => answer.body!.once("data", resolve));
    answer.body!.destroy();
    expect(
      await within(
        "the service's signal aborted after the caller stopped reading",
        5_000,
        abortedCalls[1]!.then(() => "aborted"),
      ),
    ).toBe("aborted");
  });

  it("aborts the service's signal when the caller's upload breaks off", async () => {
    const body = new Readable({ read() {} });
    body.push(Buffer.alloc(1000));
    const pending = call("PUT", "hang", { body });
    await expect.poll(() => abortedCalls.length).toBe(3);
    body.destroy(new Error("client reset"));
    expect((await rejection(pending)).code).toBe(Code.Canceled);
    await abortedCalls[2];
  });

  it("is UNAVAILABLE when the storage service cannot be reached", async () => {
    const closed = await startRpcServer({ services: [], serviceToken, logger: createLogger("test", "silent") });
    await closed.close();
    const error = await rejection(
      remoteBlobs(
        closed.url,
        serviceToken,
      )({ method: "GET", token: "x", headers: {}, signal: new AbortController().signal }),
    );
    expect(error.code).toBe(Code.Unavailable);
  });
});
