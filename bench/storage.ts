import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { type IncomingMessage, request } from "node:http";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { apiClient } from "@loom/testing/http";
import { freePort, startProcess, stopProcess } from "@loom/testing/processes";
import { freshS3Bucket } from "@loom/testing/s3";
import { testServers } from "@loom/testing/servers";
import autocannon from "autocannon";
import { percentile, printTable } from "./load.ts";

const MiB = 1024 * 1024;

/** `size` bytes from one random MiB repeated: generating them costs the client next to nothing. */
function bytes(size: number): Readable {
  const block = randomBytes(MiB);
  let left = size;
  return new Readable({
    read() {
      const n = Math.min(left, MiB);
      left -= n;
      this.push(n > 0 ? (n === MiB ? block : block.subarray(0, n)) : null);
    },
  });
}

/** One request; a GET follows a redirect as HTTP clients do (a Loom URL on S3 redirects downloads to the store). */
function send(
  method: "PUT" | "GET",
  url: string,
  headers: Record<string, string>,
  body?: Readable,
): Promise<{ status: number; received: number }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, agent: false }, (res: IncomingMessage) => {
      if (method === "GET" && res.statusCode === 307 && res.headers.location) {
        res.resume();
        send("GET", res.headers.location, headers).then(resolve, reject);
        return;
      }
      let received = 0;
      res.on("data", (chunk: Buffer) => (received += chunk.length));
      res.once("end", () => resolve({ status: res.statusCode ?? 0, received }));
      res.once("error", reject);
    });
    req.once("error", reject);
    if (body) pipeline(body, req).catch(reject);
    else req.end();
  });
}

/** MiB/s of one upload and one download of `size` bytes at these URLs. */
async function transfer(
  putUrl: string,
  getUrl: string,
  size: number,
  putHeaders: Record<string, string> = {},
): Promise<{ up: number; down: number }> {
  let started = performance.now();
  const put = await send(
    "PUT",
    putUrl,
    { "content-length": String(size), "content-type": "application/octet-stream", ...putHeaders },
    bytes(size),
  );
  const up = size / MiB / ((performance.now() - started) / 1000);
  if (put.status !== 200) throw new Error(`PUT answered ${put.status}`);
  started = performance.now();
  const get = await send("GET", getUrl, {});
  const down = size / MiB / ((performance.now() - started) / 1000);
  if (get.status !== 200 || get.received !== size)
    throw new Error(`GET answered ${get.status} with ${get.received} of ${size} bytes`);
  return { up, down };
}

/**
 * Pins a process (every thread) to CPUs. On a 2-core machine the scheduler
 * otherwise sometimes puts a server on the client's core and sometimes not,
 * and whole runs come out twice as slow or fast: the local-disk rows pin the
 * client to CPU 0 and each server, Loom and baseline alike, to CPU 1.
 */
function pin(pid: number, cpus: string): void {
  if (availableParallelism() < 2) return;
  const result = spawnSync("taskset", ["-a", "-p", "-c", cpus, String(pid)], { stdio: "ignore" });
  if (result.status !== 0)
    console.log(
      `(could not pin process ${pid} to CPU ${cpus}: taskset ${result.error ? "is missing" : `exited ${result.status}`})`,
    );
}

const median = (values: number[]) =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );

async function startLoom(key: string, env: Record<string, string>) {
  const port = await freePort();
  const proc = await startProcess(
    "apps/loom/src/main.ts",
    { PORT: String(port), BOOTSTRAP_API_KEY: key, ...env },
    `http://127.0.0.1:${port}/healthz`,
  );
  const url = `http://127.0.0.1:${port}`;
  const client = apiClient(url, key);
  const bucket = (await client.post("/buckets", { name: "bench" })).body.bucket_id as string;
  const assetUrl = async (name: string, operation?: "PUT" | "GET") => {
    await client.put(`/buckets/${bucket}/assets`, { name });
    const answer = await client.post(`/buckets/${bucket}/asset-urls/${name}`, operation ? { operation } : undefined);
    if (answer.status !== 200)
      throw new Error(`CreateAssetUrl answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    return answer.body as { url: string; headers: Record<string, string> };
  };
  return { url, bucket, assetUrl, pid: proc.pid!, stop: () => stopProcess(proc) };
}

/**
 * Issue 13: upload and download throughput of a 256 MiB file through a
 * signed URL, against a baseline in the same run — local disk: a bare
 * node:http server piping the request to a file and a file to the response;
 * S3: the same bytes PUT/GET straight to MinIO with presigned URLs. Goal:
 * ≥ 80% of the baseline both ways, on both stores. Runs alternate with the
 * baseline's (5 rounds each; the median of the rounds' ratios is shown). Also CreateAssetUrl requests/s.
 */
export async function benchStorage(options: {
  sizeMiB: number;
  rounds: number;
  seconds: number;
  connections: number;
}): Promise<void> {
  const size = options.sizeMiB * MiB;
  const key = `loom_bench-${randomBytes(24).toString("base64url")}`;
  const rows: Array<Record<string, string | number>> = [];
  // Each round measures Loom and then the baseline: the ratio shown is the median of the rounds' ratios,
  // so a slow moment of the machine weighs on both sides of one ratio rather than on one side of the median.
  const row = (store: string, direction: string, loom: number[], base: number[], baseline: string, goal = true) => {
    const ratio = median(loom.map((l, i) => l / base[i]!));
    const verdict = goal ? (ratio >= 0.8 ? "met" : "MISSED") : "(reference)";
    rows.push({
      store,
      direction,
      "Loom MiB/s": median(loom).toFixed(0),
      baseline,
      "baseline MiB/s": median(base).toFixed(0),
      ratio: `${(ratio * 100).toFixed(0)}%`,
      "goal ≥ 80%": verdict,
    });
  };

  const only = process.env.BENCH_STORAGE_ONLY; // "disk" or "s3": one store's rows
  let createUrl: autocannon.Result | undefined;
  if (only !== "s3") {
    // Local disk.
    const dir = await mkdtemp(join(tmpdir(), "loom-bench-blobs-"));
    const loom = await startLoom(key, { BLOB_DIR: join(dir, "loom") });
    const barePort = await freePort();
    const bare = await startProcess(
      "bench/bare-blobs.ts",
      { PORT: String(barePort), BLOB_DIR: dir },
      `http://127.0.0.1:${barePort}/healthz`,
    );
    pin(process.pid, "0");
    pin(loom.pid, "1");
    pin(bare.pid!, "1");
    const { url } = await loom.assetUrl("big.bin");
    const loomRuns: Array<{ up: number; down: number }> = [];
    const bareRuns: Array<{ up: number; down: number }> = [];
    await transfer(url, url, 16 * MiB); // warm-up
    for (let i = 0; i < options.rounds; i++) {
      loomRuns.push(await transfer(url, url, size));
      bareRuns.push(await transfer(`http://127.0.0.1:${barePort}/blob`, `http://127.0.0.1:${barePort}/blob`, size));
    }
    row(
      "local disk",
      "upload",
      loomRuns.map((r) => r.up),
      bareRuns.map((r) => r.up),
      "bare node:http ↔ file",
    );
    row(
      "local disk",
      "download",
      loomRuns.map((r) => r.down),
      bareRuns.map((r) => r.down),
      "bare node:http ↔ file",
    );

    // CreateAssetUrl requests/s on the all-in-one process.
    createUrl = await autocannon({
      url: `${loom.url}/buckets/${loom.bucket}/asset-urls/big.bin`,
      method: "POST",
      headers: { authorization: `Bearer ${key}` },
      connections: options.connections,
      duration: options.seconds,
    });
    await stopProcess(bare);
    await loom.stop();
    await rm(dir, { recursive: true, force: true });
    pin(process.pid, `0-${availableParallelism() - 1}`);
  }

  // S3 (MinIO).
  if (only === "disk") console.log("\n(S3 rows skipped: BENCH_STORAGE_ONLY=disk)");
  else if (!testServers.s3)
    console.log(
      '\n(S3 rows skipped: S3_TEST_ENDPOINT is not set — .ci/run starts MinIO and sets it; README, "Test servers")',
    );
  else {
    const s3 = await freshS3Bucket("loom-bench");
    const onS3 = await startLoom(key, s3.env);
    const proxied = await onS3.assetUrl("big.bin");
    const direct = { put: await onS3.assetUrl("direct.bin", "PUT"), get: await onS3.assetUrl("direct.bin", "GET") };
    if (!direct.put.url.startsWith(s3.settings.S3_ENDPOINT))
      throw new Error(`expected a presigned MinIO URL, got ${direct.put.url}`);
    const loomS3: Array<{ up: number; down: number }> = [];
    const minio: Array<{ up: number; down: number }> = [];
    await transfer(proxied.url, proxied.url, 16 * MiB);
    for (let i = 0; i < options.rounds; i++) {
      loomS3.push(await transfer(proxied.url, proxied.url, size));
      minio.push(await transfer(direct.put.url, direct.get.url, size, direct.put.headers));
    }
    row(
      "S3 (MinIO)",
      "upload",
      loomS3.map((r) => r.up),
      minio.map((r) => r.up),
      "presigned PUT/GET to MinIO",
    );
    row(
      "S3 (MinIO)",
      "download (307 to the store)",
      loomS3.map((r) => r.down),
      minio.map((r) => r.down),
      "presigned PUT/GET to MinIO",
    );
    await onS3.stop();

    // Reference: S3_PUBLIC_URLS=false, every byte through Loom (an S3 endpoint clients cannot reach).
    const proxiedS3 = await startLoom(key, { ...s3.env, S3_PUBLIC_URLS: "false" });
    const through = (await proxiedS3.assetUrl("through.bin")).url;
    const loomOnly: Array<{ up: number; down: number }> = [];
    const minioAgain: Array<{ up: number; down: number }> = [];
    await transfer(through, through, 16 * MiB);
    for (let i = 0; i < options.rounds; i++) {
      loomOnly.push(await transfer(through, through, size));
      minioAgain.push(await transfer(direct.put.url, direct.get.url, size, direct.put.headers));
    }
    row(
      "S3, S3_PUBLIC_URLS=false",
      "download (through Loom)",
      loomOnly.map((r) => r.down),
      minioAgain.map((r) => r.down),
      "presigned PUT/GET to MinIO",
      false,
    );
    await proxiedS3.stop();
    await s3.cleanup();
  }

  printTable(
    `Storage: ${options.sizeMiB} MiB through a signed URL (all-in-one process), median of ${options.rounds} rounds`,
    rows,
  );
  if (createUrl) {
    printTable("CreateAssetUrl (all-in-one process, SQLite file)", [
      {
        "requests/s": createUrl.requests.average.toFixed(0),
        "p50 ms": createUrl.latency.p50,
        "p99 ms": createUrl.latency.p99,
        non2xx: createUrl.non2xx,
        errors: createUrl.errors,
      },
    ]);
  }
}
