import type { Block } from "./blocks.ts";
import { type DocumentBytes, decodedText, wholeBytes } from "./bytes.ts";
import { type Chunk, type ChunkOptions, defaultChunkOptions } from "./chunk.ts";
import { createChunker } from "./chunker.ts";
import { documentFormat } from "./formats.ts";
import { plainTextBlocks } from "./plain-text.ts";

/** A file to read: an asset's name, its content type as stored, and its bytes. */
export interface DocumentInput {
  name: string;
  contentType?: string;
  bytes: DocumentBytes;
}

export interface DocumentOptions extends ChunkOptions {
  /**
   * The largest file of a format that must be parsed whole (PDF); text, Markdown and HTML are read as streams and
   * have no such ceiling.
   */
  maxWholeFileBytes: number;
}

/** See docs/decisions.md "Extracting and chunking documents": what pdf.js holds for a PDF of this size. */
export const defaultMaxWholeFileBytes = 32 * 1024 * 1024;

export const defaultDocumentOptions: DocumentOptions = {
  ...defaultChunkOptions,
  maxWholeFileBytes: defaultMaxWholeFileBytes,
};

/**
 * The blocks of a file's text, in order. A file that cannot be read (an unsupported type, a PDF over the ceiling or
 * not a PDF) fails with a {@link DocumentError} when iterated; an error of the byte stream itself is passed on as it
 * is.
 */
export async function* documentBlocks(
  input: DocumentInput,
  options: Pick<DocumentOptions, "maxWholeFileBytes"> = defaultDocumentOptions,
): AsyncIterable<Block> {
  const format = documentFormat(input.name, input.contentType);
  switch (format) {
    case "text":
      return yield* plainTextBlocks(decodedText(input.bytes, input.contentType));
    // The parsers are loaded when a file first needs them: a process that never ingests does not hold them
    // (the all-in-one's memory at rest counts, docs/decisions.md "Extracting and chunking documents").
    case "markdown": {
      const { markdownBlocks } = await import("./markdown.ts");
      return yield* markdownBlocks(decodedText(input.bytes, input.contentType));
    }
    case "html": {
      const { htmlBlocks } = await import("./html.ts");
      return yield* htmlBlocks(decodedText(input.bytes, input.contentType));
    }
    case "pdf": {
      const bytes = await wholeBytes(input.bytes, options.maxWholeFileBytes, JSON.stringify(input.name));
      const { pdfBlocks } = await import("./pdf.ts");
      return yield* pdfBlocks(bytes, input.name);
    }
  }
}

/**
 * A file's chunks, as they are cut: one file at a time, and for text, Markdown and HTML one piece of the file at a
 * time, so a large file is never held whole. Errors as for {@link documentBlocks}; chunks handed on before an error
 * belong to a file that failed.
 */
export async function* documentChunks(
  input: DocumentInput,
  options: Partial<DocumentOptions> = {},
): AsyncIterable<Chunk> {
  const settings = { ...defaultDocumentOptions, ...options };
  const chunker = createChunker(settings);
  for await (const block of documentBlocks(input, settings)) yield* chunker.push(block);
  yield* chunker.end();
}
