import type { ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, launchChromium, needsChromium } from "@loom/testing/browser";
import { freePort, startProcess, stopProcess } from "@loom/testing/processes";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));

interface OpenApi {
  paths: Record<string, Record<string, { operationId: string }>>;
  components: { securitySchemes: Record<string, { type: string; scheme: string; description: string }> };
}

/**
 * /docs as a reader sees it: the all-in-one process serves it, a real browser
 * (Debian's chromium) renders it, every operation of /openapi.json is on it
 * with its responses, and nothing is fetched from outside the machine.
 */
describe.skipIf(!needsChromium("the /docs page in a browser"))("the API reference page in a browser", () => {
  let dataDir: string;
  let loom: ChildProcess;
  let url: string;
  let browser: Browser;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), "loom-docs-"));
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    loom = await startProcess(
      main,
      { PORT: String(port), HOST: "127.0.0.1", LOOM_DATA_DIR: dataDir, BLOB_DIR: join(dataDir, "blobs") },
      `${url}/healthz`,
    );
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    if (loom) await stopProcess(loom);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it("renders every operation of /openapi.json with its responses and the bearer scheme, from 127.0.0.1 only", async () => {
    const openapi = (await (await fetch(`${url}/openapi.json`)).json()) as OpenApi;
    const operationIds = Object.values(openapi.paths).flatMap((methods) =>
      Object.values(methods).map((op) => op.operationId),
    );
    expect(operationIds.length).toBeGreaterThan(30);
    expect(openapi.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });

    const context = await browser.newContext();
    const requested: string[] = [];
    const outside: string[] = [];
    // Every request of the page passes here: anything not for this machine is refused and recorded.
    await context.route("**/*", (route) => {
      const target = new URL(route.request().url());
      requested.push(`${route.request().method()} ${target.href}`);
      if (target.hostname !== "127.0.0.1") {
        outside.push(target.href);
        return route.abort("blockedbyclient");
      }
      return route.continue();
    });
    const page = await context.newPage();
    page.on("websocket", (socket) => outside.push(socket.url()));
    const problems: string[] = [];
    page.on("console", (message) => void (message.type() === "error" && problems.push(message.text())));
    page.on("pageerror", (error) => problems.push(error.message));

    await page.goto(`${url}/docs`);
    // Rendered: one block per operation, each open (docExpansion "full"). Slow: Swagger UI resolves each
    // OpenAPI 3.1 operation on its own (ApiDOM), 10 to 60 s for all of them on a busy 2-core machine.
    // Counted by a locator, not a waitForFunction string: the page's CSP (no 'unsafe-eval') refuses the eval a string predicate needs.
    await expect
      .poll(() => page.locator(".opblock.is-open").count(), { timeout: 240_000, interval: 250 })
      .toBe(operationIds.length);

    const shownIds = await page.locator(".opblock-summary-operation-id").allTextContents();
    expect([...shownIds].sort()).toEqual([...operationIds].sort());
    // Every operation shows its parameters section and every error answer it may give.
    expect(await page.locator(".opblock .parameters-container").count()).toBe(operationIds.length);
    for (const status of ["400", "401", "404", "429", "503"]) {
      expect(await page.locator(`.opblock tr.response[data-code="${status}"]`).count(), status).toBe(
        operationIds.length,
      );
    }
    // The bearer scheme: the Authorize dialog names it, with its description.
    await page.locator("button.authorize").first().click();
    const dialog = page.locator(".auth-container");
    await dialog.first().waitFor();
    const dialogText = (await dialog.allTextContents()).join(" ");
    expect(dialogText).toContain("bearer");
    expect(dialogText).toContain(openapi.components.securitySchemes.bearer!.description);

    await context.close();
    expect(requested.some((r) => r.endsWith("/openapi.json"))).toBe(true);
    expect(requested.some((r) => r.endsWith("/docs/swagger-ui-bundle.js"))).toBe(true);
    expect(outside).toEqual([]);
    expect(problems).toEqual([]);
  }, 300_000);
});
