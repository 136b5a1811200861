import { Lexer, type Token, type Tokens } from "marked";
import { type Block, type BlockKind, blockPieceChars } from "./blocks.ts";

/** A window is cut at a blank line outside a code fence once it holds this much... */
const windowChars = blockPieceChars;
/** ...and at a line end anywhere once it holds this much with no such blank line. */
const forcedWindowChars = 4 * blockPieceChars;

/**
 * Blocks of Markdown, from marked's block lexer. The text stays the Markdown source (a chunk reads as its file does);
 * the lexer says where headings, paragraphs, lists, code, tables and quotes begin. A large file is lexed in windows
 * cut at blank lines outside code fences, so memory holds a window, never the file; a heading's place in the outline
 * carries from window to window.
 */
export async function* markdownBlocks(text: AsyncIterable<string>): AsyncIterable<Block> {
  let pending = "";
  // Set when the window starts inside a code fence (a forced cut): the fence's opening line, so the lexer sees code.
  let openFence: string | undefined;
  let continues = false;
  // After a scan that found no cut, the next waits for a quarter window more text (small pieces would rescan often).
  let scanAt = windowChars;
  for await (const piece of text) {
    pending += piece;
    while (pending.length >= scanAt) {
      const scan = scanLines(pending, openFence);
      let cut = scan.lastBlankOutsideFence;
      let forced = false;
      if (cut === 0) {
        if (pending.length < forcedWindowChars) {
          scanAt = pending.length + windowChars / 4;
          break;
        }
        cut = scan.lastLineEnd || pending.length;
        forced = true;
      }
      scanAt = windowChars;
      yield* windowBlocks(pending.slice(0, cut), openFence, continues);
      openFence = forced ? (cut === scan.lastLineEnd ? scan.fenceAtLastLineEnd : scan.fenceAtEnd) : undefined;
      continues = forced;
      pending = pending.slice(cut);
    }
  }
  if (pending) yield* windowBlocks(pending, openFence, continues);
}

const fenceLine = /^ {0,3}(`{3,}|~{3,})/;

interface LineScan {
  /** The end of the last blank line outside a fence that has text after it, or 0. */
  lastBlankOutsideFence: number;
  /** The end of the last `\n`, or 0, and the fence open there. */
  lastLineEnd: number;
  fenceAtLastLineEnd: string | undefined;
  fenceAtEnd: string | undefined;
}

function scanLines(text: string, openFence: string | undefined): LineScan {
  let fence = openFence;
  let fenceMark = fence === undefined ? "" : (fenceLine.exec(fence)?.[1] ?? "```");
  const scan: LineScan = { lastBlankOutsideFence: 0, lastLineEnd: 0, fenceAtLastLineEnd: undefined, fenceAtEnd: fence };
  let start = 0;
  while (start < text.length) {
    const newline = text.indexOf("\n", start);
    if (newline < 0) break;
    const line = text.slice(start, newline);
    const mark = fenceLine.exec(line)?.[1];
    if (fence === undefined) {
      if (mark) {
        fence = line;
        fenceMark = mark;
      } else if (line.trim() === "" && newline + 1 < text.length) {
        scan.lastBlankOutsideFence = newline + 1;
      }
    } else if (mark && mark[0] === fenceMark[0] && mark.length >= fenceMark.length && line.trim() === mark) {
      fence = undefined;
    }
    start = newline + 1;
    scan.lastLineEnd = start;
    scan.fenceAtLastLineEnd = fence;
  }
  scan.fenceAtEnd = fence;
  return scan;
}

function* windowBlocks(window: string, openFence: string | undefined, continues: boolean): Iterable<Block> {
  const prefix = openFence === undefined ? "" : `${openFence}\n`;
  const tokens = lexBlocks(prefix + window);
  if (!tokens) {
    // Not expected (marked's block tokens cover their source, and it stops only on a loop it detects); were it to
    // happen, the text is still read, as text.
    yield { kind: "paragraph", text: window, continues };
    return;
  }
  let at = -prefix.length;
  let first = continues;
  for (const token of tokens) {
    const start = Math.max(at, 0);
    at += token.raw.length;
    if (at <= start) continue;
    const block = tokenBlock(token, window.slice(start, at));
    if (first && block.kind !== "heading") block.continues = true;
    first = false;
    yield block;
  }
}

function lexBlocks(source: string): Token[] | undefined {
  try {
    const tokens = new Lexer().blockTokens(source);
    return tokens.reduce((length, token) => length + token.raw.length, 0) === source.length ? tokens : undefined;
  } catch {
    return undefined;
  }
}

const kinds: Partial<Record<string, BlockKind>> = {
  paragraph: "paragraph",
  text: "paragraph",
  list: "list",
  code: "code",
  table: "table",
  blockquote: "quote",
};

function tokenBlock(token: Token, text: string): Block {
  if (token.type === "heading") {
    const heading = token as Tokens.Heading;
    return { kind: "heading", text, heading: { level: heading.depth, title: plainInline(heading.text) } };
  }
  if (token.type === "space") return { kind: "other", text, continues: true };
  return { kind: kinds[token.type] ?? "other", text };
}

/** A heading's title without its inline Markdown (`**Install** on \`Linux\`` → `Install on Linux`). */
function plainInline(markdown: string): string {
  const collect = (tokens: Token[]): string =>
    tokens
      .map((token) => {
        if (token.type === "html") return "";
        if ("tokens" in token && token.tokens) return collect(token.tokens);
        return "text" in token ? String(token.text) : "";
      })
      .join("");
  return collect(Lexer.lexInline(markdown)).replace(/\s+/g, " ").trim();
}
