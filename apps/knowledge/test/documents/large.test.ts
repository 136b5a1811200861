import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { nodeFlagsFor } from "@loom/testing/processes";
import { describe, expect, it } from "vitest";
import { defaultChunkOptions } from "../../src/documents/chunk.ts";
import { documentChunks } from "../../src/documents/documents.ts";
import { paragraph } from "./chunk-checks.ts";
import { generatedFile, mebibyte } from "./generated-files.ts";
import { buildPdf } from "./pdf-fixtures.ts";

// A full collection on demand, so what the reading keeps can be told from garbage not yet collected.
setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

/** Reads every chunk and reports what a person would notice: chunks, time, and the heap kept while reading. */
async function measure(name: string, bytes: AsyncIterable<Uint8Array> | Uint8Array, textBytes: number) {
  collectGarbage();
  const before = process.memoryUsage().heapUsed;
  let keptHeap = 0;
  let gcTime = 0;
  let chunks = 0;
  const started = performance.now();
  let oversized = 0;
  for await (const chunk of documentChunks({ name, bytes })) {
    if (chunk.text.length > defaultChunkOptions.maxChars) oversized++;
    if (++chunks % 5000 === 0) {
      const gcStarted = performance.now();
      collectGarbage();
      gcTime += performance.now() - gcStarted;
      keptHeap = Math.max(keptHeap, process.memoryUsage().heapUsed - before);
    }
  }
  const seconds = (performance.now() - started - gcTime) / 1000;
  expect(oversized).toBe(0);
  const result = { chunks, rate: textBytes / mebibyte / seconds, keptHeap: keptHeap / mebibyte };
  console.log(
    `${name}: ${(textBytes / mebibyte).toFixed(1)} MiB of text -> ${chunks} chunks in ${seconds.toFixed(2)} s = ` +
      `${result.rate.toFixed(1)} MiB/s through extract+chunk; heap kept while reading +${result.keptHeap.toFixed(1)} MiB`,
  );
  return result;
}

const run = promisify(execFile);

describe("large files", { timeout: 120_000 }, () => {
  it("a 50 MiB text file is streamed through keeping a few MiB of heap, never the file", async () => {
    const result = await measure("large.txt", generatedFile("txt", 50), 50 * mebibyte);
    // About one chunk per 850 characters (the size less the overlap).
    expect(result.chunks).toBeGreaterThan(50_000);
    // Held once, the file alone would be 50 MiB of heap.
    expect(result.keptHeap).toBeLessThan(8);
  });

  it("a 20 MiB Markdown file likewise", async () => {
    expect((await measure("large.md", generatedFile("md", 20), 20 * mebibyte)).keptHeap).toBeLessThan(8);
  });

  it("a 10 MiB HTML file likewise", async () => {
    expect((await measure("large.html", generatedFile("html", 10), 10 * mebibyte)).keptHeap).toBeLessThan(8);
  });

  it("50 MiB of text or Markdown and 20 MiB of HTML add a few MiB to a process's RSS under Loom's Node flags", async () => {
    for (const [kind, megabytes] of [
      ["txt", 50],
      ["md", 50],
      ["html", 20],
    ] as const) {
      // The all-in-one's flags, the larger young generation of the two deployments (docs/decisions.md "Node flags").
      const { stdout } = await run(process.execPath, [
        ...nodeFlagsFor("apps/loom/src/main.ts"),
        join(import.meta.dirname, "stream-memory.ts"),
        kind,
        String(megabytes),
      ]);
      const result = JSON.parse(stdout) as { chunks: number; seconds: number; rssBefore: number; rssGrowth: number };
      console.log(
        `large.${kind} in its own process: ${megabytes} MiB -> ${result.chunks} chunks in ${result.seconds.toFixed(2)} s = ` +
          `${(megabytes / result.seconds).toFixed(1)} MiB/s; ` +
          `RSS ${result.rssBefore.toFixed(0)} MiB before, peak +${result.rssGrowth.toFixed(0)} MiB`,
      );
      expect(result.chunks).toBeGreaterThan(megabytes * 1000);
      expect(result.rssGrowth).toBeLessThan(40);
    }
  });

  it("a PDF of 100 pages is read a page at a time (its throughput printed)", async () => {
    const pages = Array.from({ length: 100 }, (_, p) => Array.from({ length: 6 }, (_, i) => paragraph(p * 6 + i, 3)));
    const pdf = await buildPdf(pages);
    // pdf.js is loaded on first use: a one-page PDF first, so the figure is of reading pages.
    for await (const _chunk of documentChunks({ name: "warm.pdf", bytes: await buildPdf([["Warm."]]) })) break;
    const started = performance.now();
    const result = await measure("large.pdf", pdf, pages.flat().join("\n\n").length);
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `large.pdf: the file is ${(pdf.length / mebibyte).toFixed(2)} MiB, ${pages.length} pages = ` +
        `${(pages.length / seconds).toFixed(0)} pages/s`,
    );
    expect(result.chunks).toBeGreaterThan(60);
  });
});
