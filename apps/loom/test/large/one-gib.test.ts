import type { ChildProcess } from "node:child_process";
import { createCipheriv, createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { apiClient } from "@loom/testing/http";
import { freePort, startProcess, stopProcess } from "@loom/testing/processes";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const GiB = 1024 ** 3;
const rssLimit = 200 * 1024 * 1024;

/** `size` pseudo-random bytes (AES-CTR over zeros): no two MiB alike, so a misplaced chunk changes the hash. */
function pseudoRandom(size: number): Readable {
  const cipher = createCipheriv("aes-256-ctr", randomBytes(32), randomBytes(16));
  const zeros = Buffer.alloc(1024 * 1024);
  let left = size;
  return new Readable({
    read() {
      const n = Math.min(left, zeros.length);
      left -= n;
      this.push(n > 0 ? cipher.update(n === zeros.length ? zeros : zeros.subarray(0, n)) : null);
    },
  });
}

/** Hashes what passes through. */
function hashing(hash: ReturnType<typeof createHash>): Transform {
  return new Transform({ transform: (chunk: Buffer, _e, done) => (hash.update(chunk), done(null, chunk)) });
}

/** The process's resident memory, from the kernel. */
async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

describe("1 GiB through a signed URL on the all-in-one process (local disk)", () => {
  const key = `loom_test-${randomBytes(24).toString("base64url")}`;
  let dir: string;
  let loom: ChildProcess;
  let baseUrl: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "loom-gib-"));
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    loom = await startProcess(
      "apps/loom/src/main.ts",
      { PORT: String(port), BOOTSTRAP_API_KEY: key, BLOB_DIR: dir },
      `${baseUrl}/healthz`,
    );
  });
  afterAll(async () => {
    if (loom) await stopProcess(loom);
    await rm(dir, { recursive: true, force: true });
  });

  it("streams the bytes both ways unchanged, and the process stays under 200 MB of RSS throughout", async () => {
    const client = apiClient(baseUrl, key);
    const bucket = (await client.post("/buckets", { name: "big" })).body.bucket_id;
    await client.put(`/buckets/${bucket}/assets`, { name: "data/one.gib" });
    const { url } = (await client.post(`/buckets/${bucket}/asset-urls/data/one.gib`)).body;

    const rest = await rssOf(loom.pid!);
    let peak = rest;
    const sampler = setInterval(
      () =>
        void rssOf(loom.pid!).then(
          (rss) => (peak = Math.max(peak, rss)),
          () => {},
        ),
      50,
    );
    try {
      const sent = createHash("sha256");
      const uploaded = await new Promise<number>((resolve, reject) => {
        const req = request(
          url,
          { method: "PUT", headers: { "content-length": String(GiB), "content-type": "application/x-test" } },
          (res) => {
            res.resume();
            res.once("end", () => resolve(res.statusCode ?? 0));
          },
        );
        req.once("error", reject);
        pipeline(pseudoRandom(GiB), hashing(sent), req).catch(reject);
      });
      expect(uploaded).toBe(200);
      const uploadPeak = peak;
      console.log(
        `peak RSS at rest ${(rest / 1024 / 1024).toFixed(0)} MB, while uploading ${(uploadPeak / 1024 / 1024).toFixed(0)} MB`,
      );

      const asset = (await client.get(`/buckets/${bucket}/assets/data/one.gib`)).body;
      expect(asset.size).toBe(GiB);

      const received = createHash("sha256");
      let bytes = 0;
      const downloaded = await new Promise<{ status: number; type: string | undefined }>((resolve, reject) => {
        request(url, (res) => {
          res.on("data", (chunk: Buffer) => (received.update(chunk), (bytes += chunk.length)));
          res.once("end", () => resolve({ status: res.statusCode ?? 0, type: res.headers["content-type"] }));
          res.once("error", reject);
        })
          .once("error", reject)
          .end();
      });
      expect(downloaded).toEqual({ status: 200, type: "application/x-test" });
      expect(bytes).toBe(GiB);
      expect(received.digest("hex")).toBe(sent.digest("hex"));
    } finally {
      clearInterval(sampler);
    }
    console.log(`1 GiB up and down: peak RSS of the all-in-one process ${(peak / 1024 / 1024).toFixed(0)} MB`);
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThan(rssLimit);
  }, 180_000);
});
