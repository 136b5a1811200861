import { type Block, blockPieceChars } from "./blocks.ts";

/**
 * Blocks of plain text: a paragraph ends at a blank line. The text arrives in pieces and leaves in blocks; a paragraph
 * longer than {@link blockPieceChars} leaves in pieces too, so memory holds one piece, never the file.
 */
export async function* plainTextBlocks(text: AsyncIterable<string>): AsyncIterable<Block> {
  let pending = "";
  let continues = false;
  for await (const piece of text) {
    pending += piece;
    // The last blank line seen: everything before it is whole paragraphs.
    const cut = lastParagraphEnd(pending);
    if (cut > 0) {
      yield* paragraphs(pending.slice(0, cut), continues);
      pending = pending.slice(cut);
      continues = false;
    } else if (pending.length > blockPieceChars) {
      // One long paragraph: hand on all but its last line, which may go on in the next piece.
      const lineEnd = pending.lastIndexOf("\n") + 1 || pending.length;
      yield { kind: "paragraph", text: pending.slice(0, lineEnd), continues };
      pending = pending.slice(lineEnd);
      continues = true;
    }
  }
  if (pending) yield* paragraphs(pending, continues);
}

/** The end of the last run of blank lines that is followed by more text, or 0. */
function lastParagraphEnd(text: string): number {
  const blank = /\n[ \t]*\n\s*/g;
  let end = 0;
  for (let match = blank.exec(text); match; match = blank.exec(text)) {
    if (match.index + match[0].length < text.length) end = match.index + match[0].length;
  }
  return end;
}

function* paragraphs(text: string, continues: boolean): Iterable<Block> {
  const blank = /\n[ \t]*\n\s*/g;
  let start = 0;
  let first = continues;
  for (let match = blank.exec(text); match; match = blank.exec(text)) {
    const end = match.index + match[0].length;
    yield { kind: "paragraph", text: text.slice(start, end), continues: first };
    first = false;
    start = end;
  }
  if (start < text.length) yield { kind: "paragraph", text: text.slice(start), continues: first };
}
