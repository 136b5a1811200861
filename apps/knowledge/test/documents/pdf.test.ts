import { PDFDocument } from "pdf-lib";
import { describe, expect, it } from "vitest";
import { defaultChunkOptions } from "../../src/documents/chunk.ts";
import { DocumentError } from "../../src/documents/document-error.ts";
import { documentChunks } from "../../src/documents/documents.ts";
import { collect, encode, expectChunkRules, paragraph, read } from "./chunk-checks.ts";
import { buildPdf } from "./pdf-fixtures.ts";

const asPdf =
  (bytes: Uint8Array | AsyncIterable<Uint8Array>, name = "report.pdf") =>
  () => ({
    name,
    contentType: "application/pdf",
    bytes,
  });

async function errorOf(promise: Promise<unknown>): Promise<DocumentError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DocumentError);
  return error as DocumentError;
}

describe("PDF", () => {
  it("gives its text by page, paragraphs apart, and each chunk its pages", async () => {
    const pages = [
      ["Quarterly report", paragraph(1, 6), paragraph(2, 4)],
      [paragraph(3, 8), "A short closing line on page two. Caf\u00e9 cr\u00e8me."],
      [paragraph(4, 3)],
    ];
    const { chunks, extracted } = await read(asPdf(await buildPdf(pages)));
    expectChunkRules(chunks, extracted, defaultChunkOptions);
    // Lines wrapped on the page are joined by line ends, paragraphs and pages by blank lines.
    const expected = pages.flat().join("\n\n");
    expect(extracted.replace(/(?<!\n)\n(?!\n)/g, " ")).toBe(expected);
    expect(extracted.split("\n\n")).toHaveLength(pages.flat().length);
    expect(chunks[0]?.page).toBe(1);
    expect(chunks.at(-1)?.pageEnd).toBe(3);
    for (const chunk of chunks) {
      expect(chunk.page).toBeGreaterThanOrEqual(1);
      expect(chunk.pageEnd).toBeGreaterThanOrEqual(chunk.page!);
      expect(chunk.headingPath).toEqual([]);
    }
    const closing = chunks.find((chunk) => chunk.text.includes("closing line on page two"));
    // A chunk may run on to the next page: it names both.
    expect(closing!.page).toBeLessThanOrEqual(2);
    expect(closing!.pageEnd).toBeGreaterThanOrEqual(2);
    expect(chunks.some((chunk) => chunk.pageEnd! > chunk.page!)).toBe(true);
    expect(closing?.text).toContain("Caf\u00e9 cr\u00e8me.");
  });

  it("tells headings by their type size and gives chunks their heading path", async () => {
    const pages = [
      [
        { heading: "Annual report", size: 22 },
        paragraph(1, 3),
        { heading: "Method", size: 15 },
        paragraph(2, 5),
        { heading: "Sampling", size: 13 },
        paragraph(3, 4),
      ],
      [paragraph(4, 4), { heading: "Results", size: 15 }, paragraph(5, 6)],
    ];
    const { chunks, extracted } = await read(asPdf(await buildPdf(pages)));
    expectChunkRules(chunks, extracted, defaultChunkOptions);
    const containing = (text: string) => chunks.find((chunk) => chunk.text.includes(text.slice(0, 40)));
    expect(containing(paragraph(1, 3))?.headingPath).toEqual(["Annual report"]);
    expect(containing(paragraph(2, 5))?.headingPath).toEqual(["Annual report", "Method"]);
    expect(containing(paragraph(3, 4))?.headingPath).toEqual(["Annual report", "Method", "Sampling"]);
    // A section goes on over a page break.
    expect(containing(paragraph(4, 4))?.headingPath).toEqual(["Annual report", "Method", "Sampling"]);
    const results = chunks.find((chunk) => chunk.text.startsWith("Results"));
    expect(results?.headingPath).toEqual(["Annual report", "Results"]);
    expect(results?.page).toBe(2);
  });

  it("is a per-file error when malformed, truncated or not a PDF at all", async () => {
    const good = await buildPdf([["Some text."]]);
    for (const bytes of [
      encode("%PDF-1.7\nnot really"),
      good.subarray(0, good.length / 2),
      encode("hello"),
      new Uint8Array(),
    ]) {
      const error = await errorOf(collect(documentChunks(asPdf(bytes, "broken.pdf")())));
      expect(error.reason).toBe("unreadable");
      expect(error.message).toMatch(/^"broken\.pdf" is not a readable PDF \(.+\)$/);
    }
  });

  it("is refused over the ceiling for files read whole, without reading the rest of the stream", async () => {
    const bytes = await buildPdf([[paragraph(1, 20)], [paragraph(2, 20)]]);
    const whole = await errorOf(collect(documentChunks(asPdf(bytes)(), { maxWholeFileBytes: 1000 })));
    expect(whole.reason).toBe("too_large");
    expect(whole.message).toMatch(/^"report\.pdf" is too large to read: .* over the limit of 0\.0 MiB/);
    let pieces = 0;
    async function* endless(): AsyncIterable<Uint8Array> {
      for (;;) {
        pieces++;
        yield new Uint8Array(64 * 1024);
      }
    }
    const streamed = await errorOf(collect(documentChunks(asPdf(endless())(), { maxWholeFileBytes: 1024 * 1024 })));
    expect(streamed.reason).toBe("too_large");
    expect(pieces).toBe(17);
  });

  it("with no text (a scan) is a per-file error saying so", async () => {
    const pdf = await PDFDocument.create();
    pdf.addPage().drawRectangle({ x: 10, y: 10, width: 100, height: 100 });
    const error = await errorOf(collect(documentChunks(asPdf(await pdf.save(), "scan.pdf")())));
    expect(error.reason).toBe("no_text");
    expect(error.message).toContain('"scan.pdf" has no text to read');
  });
});
