import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { type AllInOne, startAllInOne } from "@loom/test-stacks/all-in-one";
import { type Browser, launchChromium } from "@loom/testing/browser";
import { afterAll, beforeAll, expect } from "vitest";

export type Page = Awaited<ReturnType<Browser["newPage"]>>;
type Context = Awaited<ReturnType<Browser["newContext"]>>;

/** What the page may not do: reach another origin, throw, or break its Content-Security-Policy. */
export interface Watched {
  outside: string[];
  problems: string[];
}

/** axe-core from node_modules: evaluated in the page (not a script tag, which the page's policy refuses), no request made. */
const axeSource = readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** What axe-core finds on the screen as it is now, serious or critical only: rule, impact and the elements. */
export async function seriousViolations(page: Page): Promise<string[]> {
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

/** A browser tab on the console, and what it did that it may not. */
export interface ConsoleTab {
  context: Context;
  page: Page;
  watched: Watched;
  /** Closes the tab and checks it reached no other origin and had no error. */
  close(): Promise<void>;
}

/** What a session needs made first: the process's settings, other origins of this machine it may reach, and their undoing. */
export interface SessionSetup {
  env: Record<string, string>;
  /** Origins on this machine the page may also reach (an S3 server that signed URLs point at). */
  otherOrigins?: string[];
  cleanup?: () => Promise<void>;
}

/**
 * /console as a person uses it, for one test file: the all-in-one process
 * (`pnpm start`'s) serves it with its bootstrap key, a real browser (Debian's
 * chromium) runs it, and every request a tab makes is checked: one for another
 * origin (than Loom's and `otherOrigins`) fails the test. Call at the top of a
 * `describe`, with the process's settings or a setup that makes them.
 */
export function consoleSession(setup: Record<string, string> | (() => Promise<SessionSetup>) = {}) {
  let loom: AllInOne;
  let key: string;
  let browser: Browser;
  let made: SessionSetup;
  beforeAll(async () => {
    made = typeof setup === "function" ? await setup() : { env: setup };
    loom = await startAllInOne({ PORT: "0", HOST: "127.0.0.1", ...made.env });
    key = (await loom.bootstrapKey())!;
    expect(key, loom.output()).toBeDefined();
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await loom?.stop("SIGTERM");
    await made?.cleanup?.();
  });

  /** A call to the public API from outside the page, as a second client would make it. */
  const api = (method: string, path: string, apiKey = key, body?: unknown) =>
    fetch(loom.url + path, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  async function openTab(): Promise<ConsoleTab> {
    const context = await browser.newContext();
    const allowed = new Set([new URL(loom.url).origin, ...(made.otherOrigins ?? [])]);
    const watched: Watched = { outside: [], problems: [] };
    await context.route("**/*", (route) => {
      const target = new URL(route.request().url());
      if (allowed.has(target.origin)) return route.continue();
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
    return {
      context,
      page,
      watched,
      async close() {
        await context.close();
        expect(watched.outside).toEqual([]);
        expect(watched.problems).toEqual([]);
      },
    };
  }

  /** Opens the console at / (which redirects), checks the sign-in screen with axe-core, and signs in with `apiKey`. */
  async function signIn(page: Page, apiKey = key) {
    await page.goto(`${loom.url}/`);
    expect(new URL(page.url()).pathname).toBe("/console");
    await page.getByLabel("API key").waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByLabel("API key").fill(apiKey);
    await page.getByRole("button", { name: "Sign in" }).click();
  }

  return {
    get loom() {
      return loom;
    },
    get key() {
      return key;
    },
    api,
    openTab,
    signIn,
  };
}
