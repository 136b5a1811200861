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
 * between two lines, or a change of type size, ends a paragraph; headings are told by their type size.
 */
export async function* pdfBlocks(bytes: Uint8Array, name: string): AsyncIterable<Block> {
  // pdf.js may take over the buffer it is given: `bytes` is this reading's own (see `wholeBytes`).
  const pdf = await getDocumentProxy(bytes, { verbosity: 0 }).catch((error: unknown) => {
    throw unreadable(name, error);
  });
  try {
    let sawText = false;
    const headings = createHeadingFinder();
    for (let pageNumber = 1; pageNumber <= pdf.numPages; pageNumber++) {
      const page = await pdf.getPage(pageNumber).catch((error: unknown) => {
        throw unreadable(name, error);
      });
      const content = await page.getTextContent().catch((error: unknown) => {
        throw unreadable(name, error);
      });
      const paragraphs = pageParagraphs(content.items as TextItem[]);
      page.cleanup();
      headings.read(paragraphs);
      for (const paragraph of paragraphs) {
        const text = sawText ? `\n\n${paragraph.text}` : paragraph.text;
        const level = headings.level(paragraph);
        yield level === undefined
          ? { kind: "paragraph", text, page: pageNumber }
          : {
              kind: "heading",
              text,
              heading: { level, title: paragraph.text.replace(/\s+/g, " ") },
              page: pageNumber,
            };
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

interface Paragraph {
  text: string;
  lines: number;
  /** The largest font size in the paragraph. */
  size: number;
}

/** A page's paragraphs, each its lines joined by `\n`. */
function pageParagraphs(items: TextItem[]): Paragraph[] {
  const paragraphs: Paragraph[] = [];
  let lines: string[] = [];
  let line = "";
  let size = 0;
  let lineSize = 0;
  let lastY: number | undefined;
  let lastLineSize = 0;
  let lastEndX: number | undefined;
  const endLine = () => {
    lastEndX = undefined;
    if (line.trim()) {
      lines.push(line.replace(/\s+/g, " ").trim());
      size = Math.max(size, lineSize);
      lastLineSize = lineSize;
    }
    line = "";
    lineSize = 0;
  };
  const endParagraph = () => {
    endLine();
    if (lines.length > 0) paragraphs.push({ text: lines.join("\n"), lines: lines.length, size });
    lines = [];
    size = 0;
  };
  for (const item of items) {
    if (typeof item.str !== "string") continue;
    const y = item.transform?.[5];
    const fontSize = item.transform ? Math.hypot(item.transform[2] ?? 0, item.transform[3] ?? 0) : (item.height ?? 0);
    if (item.str !== "" && y !== undefined && lastY !== undefined) {
      const drop = Math.abs(lastY - y);
      const lineHeight = Math.max(fontSize, lineSize || lastLineSize, 1);
      if (drop > 0.5 * lineHeight) {
        // A new line: a new paragraph too after a gap wider than a line, or where the type's size changes (a heading).
        const previous = lineSize || lastLineSize;
        const resized = previous > 0 && Math.abs(fontSize - previous) > 0.15 * previous;
        if (drop > 1.6 * lineHeight || resized) endParagraph();
        else endLine();
      }
    }
    if (item.str !== "") {
      // Two items on one line with a gap between them are two words, though no space was written between them.
      const x = item.transform?.[4];
      const gap = x !== undefined && lastEndX !== undefined ? x - lastEndX : 0;
      if (line && gap > 0.15 * Math.max(fontSize, 1) && !/\s$/.test(line) && !/^\s/.test(item.str)) line += " ";
      line += item.str;
      lastEndX = x !== undefined ? x + (item.width ?? 0) : undefined;
      if (y !== undefined) lastY = y;
      if (item.str.trim()) lineSize = Math.max(lineSize, fontSize);
    }
    if (item.hasEOL) endLine();
  }
  endParagraph();
  return paragraphs;
}

/**
 * Headings from type sizes, as a PDF has no others: a short paragraph of one or two lines set at least 15% larger
 * than the body text (the size most characters of the document so far are set in) is a heading, of level 1 from
 * 1.6 times the body's size, 2 from 1.3 times, else 3.
 */
function createHeadingFinder() {
  const charactersBySize = new Map<number, number>();
  let body = 0;
  return {
    /** Counts a page's paragraphs into the body size before its headings are told. */
    read(paragraphs: Paragraph[]) {
      for (const paragraph of paragraphs) {
        const size = Math.round(paragraph.size * 2) / 2;
        charactersBySize.set(size, (charactersBySize.get(size) ?? 0) + paragraph.text.length);
      }
      let most = 0;
      for (const [size, characters] of charactersBySize) {
        if (characters > most) [most, body] = [characters, size];
      }
    },
    level(paragraph: Paragraph): number | undefined {
      if (body === 0 || paragraph.lines > 2 || paragraph.text.length > 120 || !/\p{L}/u.test(paragraph.text)) {
        return undefined;
      }
      const ratio = paragraph.size / body;
      return ratio >= 1.6 ? 1 : ratio >= 1.3 ? 2 : ratio >= 1.15 ? 3 : undefined;
    },
  };
}
