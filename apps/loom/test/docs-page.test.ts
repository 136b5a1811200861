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
  tags: { name: string }[];
  paths: Record<string, Record<string, { operationId: string; tags: string[] }>>;
  components: { securitySchemes: Record<string, { type: string; scheme: string; description: string }> };
}

/**
 * /docs as a reader sees it: the all-in-one process serves it, a real browser
 * (Debian's chromium) renders it, every operation of /openapi.json is on it,
 * grouped by resource and collapsed until opened, an opened one with the
 * errors it can give, and nothing is fetched from outside the machine.
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

  it("renders every operation of /openapi.json by resource, collapsed, opened with its responses, and the bearer scheme, from 127.0.0.1 only", async () => {
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

    const opened = Date.now();
    await page.goto(`${url}/docs`);
    // Rendered: one group per resource tag, one block per operation, each collapsed (docExpansion "list"), so
    // Swagger UI resolves none of them up front (it resolves each OpenAPI 3.1 operation on its own, ApiDOM).
    // Counted by a locator, not a waitForFunction string: the page's CSP (no 'unsafe-eval') refuses the eval a string predicate needs.
    await expect
      .poll(() => page.locator(".opblock").count(), { timeout: 60_000, interval: 100 })
      .toBe(operationIds.length);
    const renderedIn = Date.now() - opened;
    console.log(`/docs: ${operationIds.length} operations rendered in ${renderedIn} ms`);
    expect(renderedIn).toBeLessThan(30_000);
    expect(await page.locator(".opblock.is-open").count()).toBe(0);
    const tags = [
      ...new Set(Object.values(openapi.paths).flatMap((methods) => Object.values(methods).map((op) => op.tags[0]!))),
    ];
    expect(tags).not.toContain("default");
    expect((await page.locator(".opblock-tag").allTextContents()).map((t) => t.trim())).toEqual(
      openapi.tags.map((t) => t.name).filter((name) => tags.includes(name)),
    );
    const shownIds = await page.locator(".opblock-summary-operation-id").allTextContents();
    expect([...shownIds].sort()).toEqual([...operationIds].sort());
    // The getting-started text, above the operations.
    const info = await page.locator(".info").textContent();
    expect(info).toContain("Getting started");
    expect(info).toContain("pnpm loom keys create");
    expect(
      await page.locator(".info pre, .info code").filter({ hasText: "Authorization: Bearer" }).count(),
    ).toBeGreaterThan(0);

    // Opened, an operation shows its parameters and the errors it can give: a paid one 402, a read of a list not.
    const open = async (operationId: string) => {
      const block = page.locator(".opblock").filter({ has: page.getByText(operationId, { exact: true }) });
      await block.locator(".opblock-summary-control").click();
      await block.locator("tr.response").first().waitFor({ timeout: 60_000 });
      return block;
    };
    const createRun = await open("CreateAssistantRun");
    expect(await createRun.locator(".parameters-container").count()).toBe(1);
    // Its fields described, from the definitions that validate them.
    expect(await createRun.locator(".parameters-container").textContent()).toContain("The assistant's id");
    for (const status of ["201", "400", "401", "402", "404", "429", "503"])
      expect(await createRun.locator(`tr.response[data-code="${status}"]`).count(), status).toBe(1);
    const listAssistants = await open("ListAssistants");
    expect(await listAssistants.locator('tr.response[data-code="402"]').count()).toBe(0);
    expect(await listAssistants.locator('tr.response[data-code="404"]').count()).toBe(0);
    expect(await listAssistants.locator('tr.response[data-code="200"]').count()).toBe(1);
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
