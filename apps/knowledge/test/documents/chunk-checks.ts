import { expect } from "vitest";
import type { Chunk, ChunkOptions } from "../../src/documents/chunk.ts";
import { type DocumentInput, documentBlocks, documentChunks } from "../../src/documents/documents.ts";

export const encode = (text: string) => new TextEncoder().encode(text);

export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

/** The document's extracted text: what chunk offsets point into. */
export async function extractedText(input: () => DocumentInput): Promise<string> {
  let text = "";
  for await (const block of documentBlocks(input())) text += block.text;
  return text;
}

/** A file's chunks and its extracted text, each read afresh. */
export async function read(input: () => DocumentInput, options: Partial<ChunkOptions> = {}) {
  const chunks = await collect(documentChunks(input(), options));
  return { chunks, extracted: await extractedText(input) };
}

const wordChar = /[\p{L}\p{N}]/u;

/**
 * What every chunking must give: each chunk's text is its slice of the extracted text, within the size; chunks come
 * in order, overlap by at most the overlap, leave out no text, and never start or end inside a word.
 */
export function expectChunkRules(chunks: Chunk[], extracted: string, options: ChunkOptions) {
  let covered = 0;
  chunks.forEach((chunk, i) => {
    expect(chunk.index).toBe(i);
    expect(chunk.text).toBe(extracted.slice(chunk.start, chunk.end));
    expect(chunk.text.length).toBeGreaterThan(0);
    expect(chunk.text.length).toBeLessThanOrEqual(options.maxChars);
    expect(chunk.text).toBe(chunk.text.trim());
    const before = extracted[chunk.start - 1];
    const after = extracted[chunk.end];
    const first = extracted[chunk.start]!;
    const last = extracted[chunk.end - 1]!;
    if (before !== undefined && wordChar.test(before))
      expect(wordChar.test(first), `chunk ${i} starts mid-word`).toBe(false);
    if (after !== undefined && wordChar.test(after))
      expect(wordChar.test(last), `chunk ${i} ends mid-word`).toBe(false);
    const previous = chunks[i - 1];
    if (previous) {
      expect(chunk.start).toBeGreaterThan(previous.start);
      expect(chunk.end).toBeGreaterThan(previous.end);
      expect(previous.end - chunk.start).toBeLessThanOrEqual(options.overlapChars);
    }
    // Nothing between the last chunk and this one but whitespace.
    expect(extracted.slice(covered, chunk.start).trim()).toBe("");
    covered = Math.max(covered, chunk.end);
  });
  expect(extracted.slice(covered).trim()).toBe("");
}

/** Words of a made-up language, so no two paragraphs read alike. */
export function sentence(seed: number): string {
  const syllables = ["lo", "ra", "mi", "ten", "sa", "vok", "el", "dun", "pri", "ka"];
  const words: string[] = [];
  let n = seed * 7919 + 13;
  const length = 6 + (seed % 9);
  for (let w = 0; w < length; w++) {
    let word = "";
    const size = 1 + (n % 3);
    for (let s = 0; s < size; s++) {
      n = (n * 1103515245 + 12345) % 2147483648;
      word += syllables[n % syllables.length];
    }
    words.push(word);
  }
  const text = words.join(" ");
  return `${text[0]!.toUpperCase()}${text.slice(1)}.`;
}

export function paragraph(seed: number, sentences: number): string {
  return Array.from({ length: sentences }, (_, i) => sentence(seed * 31 + i)).join(" ");
}
