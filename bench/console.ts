import { randomBytes } from "node:crypto";
import { chromiumBinary, launchChromium } from "@loom/testing/browser";
import { freePort, startProcess, stopProcess } from "@loom/testing/processes";
import { percentile, printTable } from "./load.ts";

type Browser = Awaited<ReturnType<typeof launchChromium>>;

/** Issue 36's budget: first load ≤ 300 KB of compressed JavaScript, interactive in under 1 s. */
const scriptBudgetKB = 300;

/**
 * Marks, from inside the page, the moment a selector first matches: a
 * MutationObserver injected before the page's own scripts (an init script is
 * not subject to the page's Content-Security-Policy).
 */
const markWhenShown = (selector: string) => `
  new MutationObserver((_, observer) => {
    if (document.querySelector(${JSON.stringify(selector)})) {
      globalThis.__shownAt = performance.now();
      observer.disconnect();
    }
  }).observe(document, { childList: true, subtree: true });
`;

interface Load {
  /** From the navigation's start to the screen's control shown (the app rendered it and handles input). */
  ms: number;
  /** JavaScript bytes as sent on the wire (compressed), this load. */
  scriptBytes: number;
}

/** One cold load (a fresh context: empty cache) of `path`, until `selector` is shown. */
async function coldLoad(browser: Browser, url: string, selector: string, sessionKey?: string): Promise<Load> {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    if (sessionKey) await page.addInitScript(`sessionStorage.setItem("loom.apiKey", ${JSON.stringify(sessionKey)});`);
    await page.addInitScript(markWhenShown(selector));
    const cdp = await context.newCDPSession(page);
    await cdp.send("Network.enable");
    const scripts = new Set<string>();
    let scriptBytes = 0;
    cdp.on("Network.responseReceived", (event) => {
      if (event.type === "Script") scripts.add(event.requestId);
    });
    cdp.on("Network.loadingFinished", (event) => {
      if (scripts.has(event.requestId)) scriptBytes += event.encodedDataLength;
    });
    await page.goto(url);
    // Polled (waitForFunction would evaluate a string, which the page's policy forbids); the time is the page's own mark.
    for (;;) {
      const shownAt = (await page.evaluate("globalThis.__shownAt")) as number | undefined;
      if (shownAt !== undefined) return { ms: shownAt, scriptBytes };
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await context.close();
  }
}

/**
 * Issue 36: the console's first load, in Debian's chromium against the
 * all-in-one process on this machine: the compressed JavaScript it fetches and
 * the time until the screen can be used — the sign-in screen, and the
 * Assistants screen of a signed-in tab (its list fetched and shown) — each
 * over `rounds` cold loads. Baseline in the same run: a cold load of
 * `/healthz` from the same process (the browser's and server's floor for any
 * page).
 */
export async function benchConsole(options: { rounds: number }): Promise<void> {
  if (!chromiumBinary) {
    console.log("\n(console rows skipped: no chromium; `apt-get install -y chromium` or LOOM_CHROMIUM_BIN)");
    return;
  }
  const key = `loom_bench-${randomBytes(24).toString("base64url")}`;
  const port = await freePort();
  const proc = await startProcess(
    "apps/loom/src/main.ts",
    { PORT: String(port), BOOTSTRAP_API_KEY: key },
    `http://127.0.0.1:${port}/healthz`,
  );
  const browser = await launchChromium();
  try {
    const origin = `http://127.0.0.1:${port}`;
    // One assistant, so the signed-in screen ends with its list shown.
    const created = await fetch(`${origin}/assistants`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "bench-console" }),
    });
    if (created.status !== 201) throw new Error(`creating an assistant answered ${created.status}`);
    const subjects = [
      { name: "baseline: /healthz (a bare JSON answer)", url: `${origin}/healthz`, selector: "body" },
      { name: "sign-in screen (/console)", url: `${origin}/console`, selector: "#api-key" },
      {
        name: "Assistants screen, signed in (list fetched)",
        url: `${origin}/console/assistants`,
        selector: "ul[aria-label='Assistants'] li",
        sessionKey: key,
      },
    ];
    // One warm-up each: the process's first requests, and chromium's first page.
    for (const subject of subjects) await coldLoad(browser, subject.url, subject.selector, subject.sessionKey);
    const rows: Array<Record<string, string | number>> = [];
    let baselineMedian = 0;
    for (const subject of subjects) {
      const loads: Load[] = [];
      for (let i = 0; i < options.rounds; i++)
        loads.push(await coldLoad(browser, subject.url, subject.selector, subject.sessionKey));
      const times = loads.map((l) => l.ms).sort((a, b) => a - b);
      const median = percentile(times, 50);
      if (rows.length === 0) baselineMedian = median;
      const kb = Math.max(...loads.map((l) => l.scriptBytes)) / 1024;
      rows.push({
        load: subject.name,
        "shown p50 ms": median.toFixed(0),
        "shown max ms": times[times.length - 1]!.toFixed(0),
        "vs baseline": rows.length === 0 ? "1.00" : (median / baselineMedian).toFixed(2),
        "JS on the wire KB": kb.toFixed(1),
        [`JS budget ${scriptBudgetKB} KB`]: kb <= scriptBudgetKB ? "within" : "OVER",
        "under 1 s": times[times.length - 1]! < 1000 ? "yes" : "no",
      });
    }
    printTable(`The console's first load, ${options.rounds} cold loads each (chromium, all-in-one)`, rows);
  } finally {
    await browser.close();
    await stopProcess(proc);
  }
}
