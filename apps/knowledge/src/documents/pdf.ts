import { getDocumentProxy } from "unpdf";
import type { Block } from "./blocks.ts";
import { DocumentError } from "./document-error.ts";

/** The parts of pdf.js's text items that are read: pdf.js's own types are not exported by unpdf's entry point. */
interface TextItem {
  str?: string;
  hasEOL?: boolean;
  transform?: number[];
  width?: number;
  height?: number;
}

/**
 * Blocks of a PDF, by pdf.js (through unpdf's build of it, which runs in Node without a worker or a canvas). A PDF
 * must be parsed whole, so its bytes are held, under a ceiling checked before; its text is read a page at a time and
 * each page let go, and each block knows its page. Lines come from the items' positions; a gap wider than a line
 * between two lines ends a paragraph.
 */
export async function* pdfBlocks(bytes: Uint8Array, name: string): AsyncIterable<Block> {
  // pdf.js may take over the buffer it is given: `bytes` is this reading's own (see `wholeBytes`).
  const pdf = await getDocumentProxy(bytes, { verbosity: 0 }).catch((error: unknown) => {
    throw unreadable(name, error);
  });
  try {
    let sawText = false;
    for (let pageNumber = 1; pageNumber <= pdf.numPages; pageNumber++) {
      const page = await pdf.getPage(pageNumber).catch((error: unknown) => {
        throw unreadable(name, error);
      });
      const content = await page.getTextContent().catch((error: unknown) => {
        throw unreadable(name, error);
      });
      const paragraphs = pageParagraphs(content.items as TextItem[]);
      page.cleanup();
      for (const paragraph of paragraphs) {
        yield { kind: "paragraph", text: sawText ? `\n\n${paragraph}` : paragraph, page: pageNumber };
        sawText = true;
      }
    }
    if (!sawText && pdf.numPages > 0) {
      throw new DocumentError(
        "no_text",
        `${JSON.stringify(name)} has no text to read: a scanned PDF holds pictures of its pages, not their text`,
      );
    }
  } finally {
    await pdf.loadingTask.destroy();
  }
}

function unreadable(name: string, error: unknown): DocumentError {
  const reason = error instanceof Error ? error.message : String(error);
  const password = error instanceof Error && error.name === "PasswordException";
  return new DocumentError(
    "unreadable",
    password
      ? `${JSON.stringify(name)} is a password-protected PDF: it cannot be read`
      : `${JSON.stringify(name)} is not a readable PDF (${reason})`,
    { cause: error },
  );
}

/** A page's paragraphs, each its lines joined by `\n`. */
function pageParagraphs(items: TextItem[]): string[] {
  const paragraphs: string[] = [];
  let lines: string[] = [];
  let line = "";
  let lastY: number | undefined;
  let lastHeight = 0;
  let lastEndX: number | undefined;
  const endLine = () => {
    lastEndX = undefined;
    if (line.trim()) lines.push(line.replace(/\s+/g, " ").trim());
    line = "";
  };
  const endParagraph = () => {
    endLine();
    if (lines.length > 0) paragraphs.push(lines.join("\n"));
    lines = [];
  };
  for (const item of items) {
    if (typeof item.str !== "string") continue;
    const y = item.transform?.[5];
    const height = item.height ?? 0;
    if (item.str !== "" && y !== undefined && lastY !== undefined) {
      const drop = Math.abs(lastY - y);
      const lineHeight = Math.max(height, lastHeight, 1);
      if (drop > 1.6 * lineHeight) endParagraph();
      else if (drop > 0.5 * lineHeight) endLine();
    }
    if (item.str !== "") {
      // Two items on one line with a gap between them are two words, though no space was written between them.
      const x = item.transform?.[4];
      const gap = x !== undefined && lastEndX !== undefined ? x - lastEndX : 0;
      if (line && gap > 0.15 * Math.max(height, 1) && !/\s$/.test(line) && !/^\s/.test(item.str)) line += " ";
      line += item.str;
      lastEndX = x !== undefined ? x + (item.width ?? 0) : undefined;
      if (y !== undefined) lastY = y;
      lastHeight = height || lastHeight;
    }
    if (item.hasEOL) endLine();
  }
  endParagraph();
  return paragraphs;
}
