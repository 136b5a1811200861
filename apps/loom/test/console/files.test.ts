import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { needsChromium } from "@loom/testing/browser";
import { freshS3Bucket } from "@loom/testing/s3";
import { needs } from "@loom/testing/servers";
import { describe, expect, it } from "vitest";
import { consoleSession, seriousViolations } from "./console-session.ts";

const sha256 = (path: string) =>
  new Promise<string>((resolve, reject) => {
    const hash = createHash("sha256");
    createReadStream(path)
      .on("data", (chunk) => hash.update(chunk))
      .on("end", () => resolve(hash.digest("hex")))
      .on("error", reject);
  });

/** The Files screen: buckets, and a large file up through a signed URL with its progress, and back. */
describe.skipIf(!needsChromium("the console's Files screen"))("the console: files", () => {
  const session = consoleSession();

  it("makes a bucket, uploads 20 MB with the progress reaching 100%, downloads it back byte-identical, and deletes", async () => {
    const dir = await mkdtemp(join(tmpdir(), "loom-console-"));
    try {
      const big = join(dir, "big.bin");
      const bytes = Buffer.alloc(20 * 1024 * 1024);
      for (let i = 0; i < bytes.length; i += 4) bytes.writeUInt32LE((i * 2654435761) >>> 0, i);
      await writeFile(big, bytes);
      const markup = "<img src=x onerror=window.__xss=1>.txt";
      const marked = join(dir, markup);
      await writeFile(marked, "hello");

      const { context, page, close } = await session.openTab();
      await session.signIn(page);
      await page.getByRole("link", { name: "Files", exact: true }).click();
      await page.getByText("No buckets yet.").waitFor();
      expect(await seriousViolations(page)).toEqual([]);
      await page.getByLabel("Name", { exact: true }).fill("Uploads");
      await page.getByRole("button", { name: "Create" }).click();
      const buckets = page.getByRole("list", { name: "Buckets" });
      await buckets.getByRole("link", { name: "Uploads" }).click();
      await page.getByText("No files in this bucket yet.").waitFor();
      expect(await seriousViolations(page)).toEqual([]);

      // Uploads slowed to 40 MB/s (half a second for this file), and the progress bar sampled as it goes:
      // it moves through values between empty and full, and ends full.
      const cdp = await context.newCDPSession(page);
      await cdp.send("Network.emulateNetworkConditions", {
        offline: false,
        latency: 0,
        downloadThroughput: -1,
        uploadThroughput: 40 * 1024 * 1024,
      });
      // A string, run in the page (where the DOM is): this file is type-checked without DOM types.
      await page.evaluate(`
        globalThis.__progressSeen = [];
        setInterval(() => {
          const bar = document.querySelector("progress");
          if (bar) globalThis.__progressSeen.push(bar.value / bar.max);
        }, 10);
      `);
      await page.getByLabel("File", { exact: true }).setInputFiles(big);
      await page.getByRole("button", { name: "Upload", exact: true }).click();
      const progress = page.getByRole("progressbar", { name: "Upload progress" });
      await page.getByRole("status").getByText("Uploaded big.bin.").waitFor({ timeout: 30_000 });
      const seen = (await page.evaluate("globalThis.__progressSeen")) as number[];
      expect(seen.filter((fraction) => fraction > 0 && fraction < 1).length, seen.join(" ")).toBeGreaterThan(0);
      await cdp.detach();
      expect(
        await progress.evaluate((element) => {
          const bar = element as unknown as { value: number; max: number };
          return [bar.value, bar.max];
        }),
      ).toEqual([bytes.length, bytes.length]);
      const files = page.getByRole("list", { name: "Files" });
      await files.getByText("big.bin", { exact: true }).waitFor();
      await files.getByText(`${bytes.length.toLocaleString("en-US")} bytes`).waitFor();
      expect(await seriousViolations(page)).toEqual([]);

      const [download] = await Promise.all([
        page.waitForEvent("download"),
        page.getByRole("button", { name: "Download big.bin" }).click(),
      ]);
      const saved = join(dir, "downloaded.bin");
      await download.saveAs(saved);
      expect(await sha256(saved)).toBe(createHash("sha256").update(bytes).digest("hex"));

      // A file name is text: the markup in it is shown, and runs nothing.
      await page.getByLabel("File", { exact: true }).setInputFiles(marked);
      await page.getByRole("button", { name: "Upload", exact: true }).click();
      await files.getByText(markup, { exact: true }).waitFor();
      expect(await files.locator("img").count()).toBe(0);
      expect(await page.evaluate(() => (globalThis as { __xss?: unknown }).__xss)).toBeUndefined();

      await page.getByRole("button", { name: "Delete big.bin" }).click();
      const confirm = page.getByRole("group", { name: "Delete big.bin?" });
      await expect
        .poll(() => confirm.getByRole("button", { name: "Cancel" }).and(page.locator(":focus")).count())
        .toBe(1);
      expect(await seriousViolations(page)).toEqual([]);
      await confirm.getByRole("button", { name: "Yes, delete" }).click();
      await expect.poll(() => files.getByText("big.bin", { exact: true }).count()).toBe(0);
      expect(await files.getByRole("listitem").count()).toBe(1);

      await page.getByRole("link", { name: "All buckets" }).click();
      await page.getByRole("button", { name: "Delete Uploads" }).click();
      await page.getByRole("group", { name: "Delete Uploads?" }).getByRole("button", { name: "Yes, delete" }).click();
      await page.getByText("No buckets yet.").waitFor();
      const listed = (await (await session.api("GET", "/buckets")).json()) as { buckets: unknown[] };
      expect(listed.buckets).toEqual([]);

      await close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 90_000);

  it("shows the API's own message for a bucket that is not there, at its URL", async () => {
    const missing = "00000000-0000-4000-8000-000000000000";
    const refused = (await (await session.api("GET", `/buckets/${missing}`)).json()) as {
      errors: { message: string }[];
    };
    const { page, close } = await session.openTab();
    await session.signIn(page);
    await page.getByRole("heading", { name: "Assistants" }).waitFor();
    await page.goto(`${session.loom.url}/console/files/${missing}`);
    const alerts = page.getByRole("alert");
    await alerts.first().waitFor();
    expect(await alerts.allTextContents()).toContain(refused.errors[0]!.message);
    expect(await seriousViolations(page)).toEqual([]);
    await close();
  }, 60_000);
});

/**
 * Blobs in S3 with S3's own signed URLs (MinIO here): the page uploads and
 * downloads straight to the store's origin, which the console's policy names
 * (the all-in-one finds it from the store), and MinIO's default CORS allows.
 */
describe.skipIf(
  !needsChromium("the console's uploads to S3") || !needs("S3_TEST_ENDPOINT", "the console's uploads to S3 (MinIO)"),
)("the console: files on S3 with S3's own signed URLs", () => {
  let s3Origin: string;
  let objects: () => Promise<number>;
  const session = consoleSession(async () => {
    const s3 = await freshS3Bucket("loom-console");
    s3Origin = new URL(s3.settings.S3_ENDPOINT).origin;
    objects = async () => (await s3.objectKeys()).length;
    return { env: s3.env, otherOrigins: [s3Origin], cleanup: s3.cleanup };
  });

  it("uploads a file to the store's origin with its progress, and downloads it back byte-identical", async () => {
    const page0 = await fetch(`${session.loom.url}/console`);
    expect(page0.headers.get("content-security-policy")).toContain(`connect-src 'self' ${s3Origin};`);

    const dir = await mkdtemp(join(tmpdir(), "loom-console-s3-"));
    try {
      const file = join(dir, "report.bin");
      const bytes = Buffer.alloc(3 * 1024 * 1024);
      for (let i = 0; i < bytes.length; i += 4) bytes.writeUInt32LE((i * 2246822519) >>> 0, i);
      await writeFile(file, bytes);
      const { page, close } = await session.openTab();
      const toStore: string[] = [];
      page.on("request", (request) => {
        if (new URL(request.url()).origin === s3Origin) toStore.push(request.method());
      });
      await session.signIn(page);
      await page.getByRole("link", { name: "Files", exact: true }).click();
      await page.getByLabel("Name", { exact: true }).fill("On S3");
      await page.getByRole("button", { name: "Create" }).click();
      await page.getByRole("list", { name: "Buckets" }).getByRole("link", { name: "On S3" }).click();
      await page.getByText("No files in this bucket yet.").waitFor();

      await page.getByLabel("File", { exact: true }).setInputFiles(file);
      await page.getByRole("button", { name: "Upload", exact: true }).click();
      await page.getByRole("status").getByText("Uploaded report.bin.").waitFor({ timeout: 30_000 });
      const files = page.getByRole("list", { name: "Files" });
      await files.getByText(`${bytes.length.toLocaleString("en-US")} bytes`).waitFor();
      expect(await objects()).toBe(1);

      const [download] = await Promise.all([
        page.waitForEvent("download"),
        page.getByRole("button", { name: "Download report.bin" }).click(),
      ]);
      const saved = join(dir, "downloaded.bin");
      await download.saveAs(saved);
      expect(await sha256(saved)).toBe(createHash("sha256").update(bytes).digest("hex"));
      // The bytes went to the store itself, not through Loom.
      expect(toStore).toContain("PUT");
      await close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
