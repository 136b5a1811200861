import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AllInOne, startAllInOne } from "@loom/test-stacks/all-in-one";
import { type Browser, launchChromium, needsChromium } from "@loom/testing/browser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** What the page may not do: reach another origin, throw, or break its Content-Security-Policy. */
interface Watched {
  outside: string[];
  problems: string[];
}

type Page = Awaited<ReturnType<Browser["newPage"]>>;

/** axe-core from node_modules: evaluated in the page (not a script tag, which the page's policy refuses), no request made. */
const axeSource = readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** What axe-core finds on the screen as it is now, serious or critical only: rule, impact and the elements. */
async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(await axeSource);
  const results = (await page.evaluate("axe.run(document, { resultTypes: ['violations'] })")) as {
    passes: unknown[];
    violations: { id: string; impact: string; nodes: { target: string[] }[] }[];
  };
  // Rules that passed too: axe ran and found the screen's elements, rather than nothing to check.
  expect(results.passes.length).toBeGreaterThan(10);
  return results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.impact} ${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

/**
 * /console as a person uses it: the all-in-one process (`pnpm start`'s)
 * serves it, a real browser (Debian's chromium) runs it, and every request
 * it makes is checked: one for another origin fails the test.
 */
describe.skipIf(!needsChromium("the console in a browser"))("the console in a browser", () => {
  let loom: AllInOne;
  let key: string;
  let browser: Browser;
  beforeAll(async () => {
    loom = await startAllInOne({ PORT: "0", HOST: "127.0.0.1" });
    key = (await loom.bootstrapKey())!;
    expect(key, loom.output()).toBeDefined();
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await loom?.stop("SIGTERM");
  });

  const api = (method: string, path: string, apiKey: string, body?: unknown) =>
    fetch(loom.url + path, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  async function openPage() {
    const context = await browser.newContext();
    const origin = new URL(loom.url).origin;
    const watched: Watched = { outside: [], problems: [] };
    await context.route("**/*", (route) => {
      const target = new URL(route.request().url());
      if (target.origin === origin) return route.continue();
      watched.outside.push(target.href);
      return route.abort("blockedbyclient");
    });
    const page = await context.newPage();
    page.on("websocket", (socket) => watched.outside.push(socket.url()));
    page.on("pageerror", (error) => watched.problems.push(error.message));
    // A refused API call logs "Failed to load resource" by itself; any other error (a CSP refusal too) is a problem.
    page.on("console", (message) => {
      if (message.type() === "error" && !message.text().startsWith("Failed to load resource"))
        watched.problems.push(message.text());
    });
    return { context, page, watched };
  }

  async function signIn(page: Page, apiKey: string) {
    await page.goto(`${loom.url}/`);
    expect(new URL(page.url()).pathname).toBe("/console");
    await page.getByLabel("API key").waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByLabel("API key").fill(apiKey);
    await page.getByRole("button", { name: "Sign in" }).click();
  }

  it("signs in with the key, lists the organization's assistants, creates one and lists it, and signs out", async () => {
    const { context, page, watched } = await openPage();
    await signIn(page, key);

    await page.getByRole("link", { name: "Assistants" }).click();
    await page.getByText("No assistants yet.").waitFor();
    // By keyboard: the button opens the form with the focus in "Name", Enter creates.
    await page.getByRole("button", { name: "New assistant" }).focus();
    await page.keyboard.press("Enter");
    await expect.poll(() => page.getByLabel("Name").and(page.locator(":focus")).count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await page.keyboard.type("Support bot");
    await page.keyboard.press("Enter");
    const list = page.getByRole("list", { name: "Assistants" });
    await list.getByText("Support bot", { exact: true }).waitFor();
    expect(await list.getByRole("listitem").count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    // Made through the API, in the key's organization.
    const listed = (await (await api("GET", "/assistants", key)).json()) as { assistants: { name: string }[] };
    expect(listed.assistants.map((a) => a.name)).toEqual(["Support bot"]);

    // The key lives in this tab's session only: never in the URL, nor in localStorage or a cookie.
    expect(page.url()).not.toContain(key);
    expect(await page.evaluate(() => Object.values(sessionStorage))).toEqual([key]);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect(await context.cookies()).toEqual([]);
    // A reload keeps the session, on the screen's own path.
    await page.reload();
    expect(new URL(page.url()).pathname).toBe("/console/assistants");
    await list.getByText("Support bot", { exact: true }).waitFor();

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByLabel("API key").waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);

    await context.close();
    expect(watched.outside).toEqual([]);
    expect(watched.problems).toEqual([]);
  }, 60_000);

  it("shows the API's own message for a wrong key, and keeps nothing", async () => {
    const wrong = "loom_not-a-key-0123456789abcdefghijklmnopqrstuv";
    const refused = (await (await api("GET", "/assistants", wrong)).json()) as { errors: { message: string }[] };
    expect(refused.errors[0]?.message).toBeTruthy();

    const { context, page, watched } = await openPage();
    await signIn(page, wrong);
    const alert = page.getByRole("alert");
    await alert.waitFor();
    expect(await alert.textContent()).toBe(refused.errors[0]!.message);
    expect(await seriousViolations(page)).toEqual([]);
    expect(await page.getByLabel("API key").isVisible()).toBe(true);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);

    await context.close();
    expect(watched.outside).toEqual([]);
    expect(watched.problems).toEqual([]);
  }, 60_000);

  it("renders a name as text, running nothing in it, and pages through the list 20 at a time", async () => {
    const markup = "<img src=x onerror=window.__xss=1>";
    // 21 more: with the first test's, 23 assistants, two pages; the newest (this one) first.
    for (let i = 1; i <= 21; i++)
      expect((await api("POST", "/assistants", key, { name: `Paged ${i}` })).status).toBe(201);
    expect((await api("POST", "/assistants", key, { name: markup })).status).toBe(201);

    const { context, page, watched } = await openPage();
    const pageSizes: string[] = [];
    page.on("request", (request) => {
      const url = new URL(request.url());
      if (url.pathname === "/assistants")
        pageSizes.push(`${url.searchParams.get("page")}/${url.searchParams.get("page_size")}`);
    });
    await signIn(page, key);
    const list = page.getByRole("list", { name: "Assistants" });
    await list.getByText(markup, { exact: true }).waitFor();
    expect(await list.locator("img").count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __xss?: unknown }).__xss)).toBeUndefined();

    expect(await list.getByRole("listitem").count()).toBe(20);
    await page.getByText("Page 1 of 2").waitFor();
    await page.getByRole("button", { name: "Next" }).click();
    await page.getByText("Page 2 of 2").waitFor();
    expect(await list.getByRole("listitem").allTextContents()).toEqual(["Paged 2", "Paged 1", "Support bot"]);
    expect(pageSizes).toContain("2/20");

    await context.close();
    expect(watched.outside).toEqual([]);
    expect(watched.problems).toEqual([]);
  }, 60_000);
  it("creates an API key, shows its value once, renames it, and revokes it: the next request with it is refused", async () => {
    const { context, page, watched } = await openPage();
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: new URL(loom.url).origin });
    await signIn(page, key);
    await page.getByRole("link", { name: "API keys" }).click();
    const list = page.getByRole("list", { name: "API keys" });
    await list.getByRole("listitem").first().waitFor();
    const before = await list.getByRole("listitem").count();

    await page.getByLabel("Name", { exact: true }).fill("CI key");
    await page.getByRole("button", { name: "Create" }).click();
    const shown = page.getByRole("region", { name: "New key's value" });
    const value = (await shown.locator("code").textContent()) ?? "";
    expect(value).toMatch(/^loom_[A-Za-z0-9_-]{43}$/);
    await shown.getByRole("button", { name: "Copy" }).click();
    await shown.getByRole("status").getByText("Copied.").waitFor();
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(value);
    await list.getByText("CI key", { exact: true }).waitFor();
    expect(await list.getByRole("listitem").count()).toBe(before + 1);
    // The new key works, from outside the page.
    expect((await api("GET", "/assistants", value)).status).toBe(200);
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByRole("button", { name: "Rename CI key" }).click();
    await expect.poll(() => page.getByLabel("New name").and(page.locator(":focus")).count()).toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByLabel("New name").fill("CI key, renamed");
    await page.getByRole("button", { name: "Save" }).click();
    await list.getByText("CI key, renamed", { exact: true }).waitFor();

    // Shown once: after leaving the screen and coming back, the value is nowhere on the page.
    await page.getByRole("link", { name: "Assistants" }).click();
    await page.getByRole("heading", { name: "Assistants" }).waitFor();
    await page.getByRole("link", { name: "API keys" }).click();
    await list.getByText("CI key, renamed", { exact: true }).waitFor();
    expect(await page.getByText(value).count()).toBe(0);
    expect(await page.content()).not.toContain(value);

    await page.getByRole("button", { name: "Revoke CI key, renamed" }).click();
    const confirm = page.getByRole("group", { name: "Revoke CI key, renamed?" });
    // The focus goes to the choice that keeps the key: Enter alone revokes nothing.
    await expect
      .poll(() => confirm.getByRole("button", { name: "Cancel" }).and(page.locator(":focus")).count())
      .toBe(1);
    expect(await seriousViolations(page)).toEqual([]);
    await confirm.getByRole("button", { name: "Yes, revoke" }).click();
    await expect.poll(() => list.getByText("CI key, renamed", { exact: true }).count()).toBe(0);
    expect(await list.getByRole("listitem").count()).toBe(before);
    expect((await api("GET", "/assistants", value)).status).toBe(401);

    await context.close();
    expect(watched.outside).toEqual([]);
    expect(watched.problems).toEqual([]);
  }, 60_000);

  it("makes a bucket, uploads 20 MB with the progress reaching 100%, downloads it back byte-identical, and deletes", async () => {
    const dir = await mkdtemp(join(tmpdir(), "loom-console-"));
    const sha256 = (path: string) =>
      new Promise<string>((resolve, reject) => {
        const hash = createHash("sha256");
        createReadStream(path)
          .on("data", (chunk) => hash.update(chunk))
          .on("end", () => resolve(hash.digest("hex")))
          .on("error", reject);
      });
    try {
      const big = join(dir, "big.bin");
      const bytes = Buffer.alloc(20 * 1024 * 1024);
      for (let i = 0; i < bytes.length; i += 4) bytes.writeUInt32LE((i * 2654435761) >>> 0, i);
      await writeFile(big, bytes);
      const markup = "<img src=x onerror=window.__xss=1>.txt";
      const marked = join(dir, markup);
      await writeFile(marked, "hello");

      const { context, page, watched } = await openPage();
      await signIn(page, key);
      await page.getByRole("link", { name: "Files" }).click();
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
      const listed = (await (await api("GET", "/buckets", key)).json()) as { buckets: unknown[] };
      expect(listed.buckets).toEqual([]);

      await context.close();
      expect(watched.outside).toEqual([]);
      expect(watched.problems).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
