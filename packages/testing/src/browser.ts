import { type Browser, chromium } from "playwright-core";
import { findBinary } from "./own-servers.ts";

export type { Browser };

/**
 * Debian's chromium, for the tests that look at a page in a real browser
 * (driven by playwright-core, which brings no browser of its own):
 * `LOOM_CHROMIUM_BIN` (.ci/run sets it), else `chromium` on PATH, else /usr/bin/chromium.
 */
export const chromiumBinary = findBinary("LOOM_CHROMIUM_BIN", "chromium", ["/usr/bin/chromium"]);

/** Says out loud that a browser suite does not run, and why. */
export function needsChromium(suite: string): boolean {
  if (!chromiumBinary)
    console.warn(
      `SKIPPED: ${suite} — no chromium (LOOM_CHROMIUM_BIN, or \`apt-get install -y chromium\`; .ci/run installs it)`,
    );
  return chromiumBinary !== undefined;
}

/** A headless chromium (use after `needsChromium`); close it when done. */
export function launchChromium(): Promise<Browser> {
  if (!chromiumBinary) throw new Error("no chromium: check needsChromium first");
  return chromium.launch({ executablePath: chromiumBinary });
}
