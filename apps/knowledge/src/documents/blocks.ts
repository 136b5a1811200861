/**
 * What an extractor hands the chunker: the extracted text in order, cut where the document's structure is. The
 * extracted text of a document is the concatenation of its blocks' `text`, so offsets into it are sums of lengths.
 */
export type BlockKind = "heading" | "paragraph" | "list" | "code" | "table" | "quote" | "other";

export interface Block {
  kind: BlockKind;
  /** Appended verbatim to the extracted text (with the whitespace that follows or precedes it). */
  text: string;
  /**
   * More of the previous block (a long block arriving in pieces, or whitespace between blocks): no boundary before
   * it.
   */
  continues?: boolean;
  /** For a heading: its level (1 is the top) and its title as plain text. */
  heading?: { level: number; title: string };
  /** The 1-based page the block is on (PDF). */
  page?: number;
}

/** Blocks longer than this are handed on in pieces (`continues`), so no block holds a large file. */
export const blockPieceChars = 64 * 1024;
