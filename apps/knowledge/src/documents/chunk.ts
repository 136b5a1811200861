/**
 * A piece of a document small enough to embed and to hand a model, with where it came from. Offsets are UTF-16 code
 * units (JavaScript string indices) into the document's extracted text: `text` is exactly
 * `extracted.slice(start, end)`. Consecutive chunks of one section overlap (`start` before the previous `end`).
 */
export interface Chunk {
  /** 0-based position among the document's chunks. */
  index: number;
  text: string;
  start: number;
  end: number;
  /** The titles of the headings the chunk is under, outermost first (`["Install", "Linux"]`); empty when none. */
  headingPath: string[];
  /** PDF: the 1-based page the chunk starts on, and the one it ends on. */
  page?: number;
  pageEnd?: number;
}

/** How chunks are cut: sizes in characters (UTF-16 code units). */
export interface ChunkOptions {
  /** The most characters in a chunk's text. */
  maxChars: number;
  /** The most characters a chunk repeats from the end of the one before it (same section only). */
  overlapChars: number;
}

/** See docs/decisions.md "Extracting and chunking documents" for why these sizes. */
export const defaultChunkOptions: ChunkOptions = { maxChars: 1000, overlapChars: 150 };

/**
 * The text to index and embed for a chunk: its heading path on a line of its own, then its text, so a chunk deep in a
 * section still matches the words of the headings above it ("Install > Linux").
 */
export function chunkIndexText(chunk: Pick<Chunk, "text" | "headingPath">): string {
  return chunk.headingPath.length > 0 ? `${chunk.headingPath.join(" > ")}\n\n${chunk.text}` : chunk.text;
}
