import type { Block } from "./blocks.ts";
import type { Chunk, ChunkOptions } from "./chunk.ts";
import {
  blankLineCut,
  firstSentenceStart,
  firstWordStart,
  lastResortCut,
  lineCut,
  sentenceCut,
  spaceCut,
} from "./cut-points.ts";

/**
 * Cuts a document's blocks into chunks. A heading always starts a new chunk (a chunk holds one section, and knows its
 * heading path); within a section a chunk of more than `maxChars` is cut at the strongest boundary in the second half
 * of its window — a block's start (paragraph, list, code, table), a blank line, a line end, a sentence's end, a space
 * — and the next chunk starts up to `overlapChars` earlier, at a sentence's or a word's start. Only the text not yet
 * cut is held: memory does not grow with the document.
 */
export function createChunker(options: ChunkOptions) {
  const { maxChars, overlapChars } = options;
  if (!Number.isInteger(maxChars) || maxChars < 50) throw new RangeError("maxChars must be an integer of at least 50");
  if (!Number.isInteger(overlapChars) || overlapChars < 0 || overlapChars > maxChars / 2) {
    throw new RangeError("overlapChars must be an integer from 0 to half of maxChars");
  }
  const minCut = Math.floor(maxChars / 2);

  /** The extracted text from offset `base` on. */
  let buffer = "";
  let base = 0;
  /** Where the chunk being gathered starts, where its section starts, where the last chunk was cut. */
  let runStart = 0;
  let sectionStart = 0;
  let lastCut = 0;
  /** Whether the chunk being gathered has text besides headings (a heading alone is not a chunk). */
  let runHasContent = false;
  let blockStarts: number[] = [];
  const headings: { level: number; title: string }[] = [];
  const pages: { at: number; page: number }[] = [];
  let index = 0;
  let out: Chunk[] = [];

  const end = () => base + buffer.length;
  const local = (offset: number) => offset - base;

  const pageAt = (offset: number): number | undefined => {
    let page: number | undefined;
    for (let i = pages.length - 1; i >= 0; i--) {
      const mark = pages[i]!;
      if (mark.at <= offset) {
        page = mark.page;
        break;
      }
    }
    return page;
  };

  const emit = (start: number, stop: number) => {
    const raw = buffer.slice(local(start), local(stop));
    const lead = raw.length - raw.trimStart().length;
    const text = raw.trim();
    if (!text) return;
    const chunk: Chunk = {
      index: index++,
      text,
      start: start + lead,
      end: start + lead + text.length,
      headingPath: headings.map((heading) => heading.title).filter((title) => title !== ""),
    };
    const page = pageAt(chunk.start);
    if (page !== undefined) {
      chunk.page = page;
      chunk.pageEnd = pageAt(chunk.end - 1) ?? page;
    }
    out.push(chunk);
  };

  const moveRunStart = (to: number) => {
    runStart = to;
    if (blockStarts.length > 0 && blockStarts[0]! <= to) blockStarts = blockStarts.filter((at) => at > to);
    // Text before the run is never read again: dropped at once, so that each block appended copies (flattens) at
    // most a chunk's worth of text, and a chunk's text, sliced from the buffer, holds no more than that alive.
    if (to > base) {
      buffer = buffer.slice(local(to));
      base = to;
    }
  };

  /** The best cut in the chunk's window `(runStart + minCut, runStart + maxChars]`, as an absolute offset. */
  const bestCut = (): number => {
    const from = local(runStart + minCut);
    const to = local(runStart + maxChars);
    for (let i = blockStarts.length - 1; i >= 0; i--) {
      const at = local(blockStarts[i]!);
      if (at <= to && at > from) return base + at;
      if (at <= from) break;
    }
    for (const cut of [blankLineCut, lineCut, sentenceCut]) {
      const at = cut(buffer, from, to);
      if (at >= 0) return base + at;
    }
    const start = local(runStart);
    const at = spaceCut(buffer, start, to);
    return base + (at >= 0 ? at : lastResortCut(buffer, start, to));
  };

  /** Where the next chunk starts after a cut: up to `overlapChars` back, at a sentence's or a word's start. */
  const nextStart = (cut: number): number => {
    const from = Math.max(cut - overlapChars, sectionStart, runStart + 1);
    if (overlapChars === 0 || from >= cut) return cut;
    const sentence = firstSentenceStart(buffer, local(from), local(cut));
    if (sentence >= 0) return base + sentence;
    const word = firstWordStart(buffer, local(from), local(cut));
    return word >= 0 ? base + word : cut;
  };

  const cutOne = () => {
    const cut = bestCut();
    emit(runStart, cut);
    lastCut = cut;
    moveRunStart(nextStart(cut));
  };

  /** The rest of the run as a chunk, unless it holds nothing the last chunk did not. */
  const finishRun = () => {
    const stop = end();
    if (/\S/.test(buffer.slice(local(Math.max(lastCut, runStart)), local(stop)))) emit(runStart, stop);
    lastCut = stop;
    sectionStart = stop;
    runHasContent = false;
    moveRunStart(stop);
  };

  return {
    /** Takes the next block; returns the chunks it completed. */
    push(block: Block): Chunk[] {
      out = [];
      const at = end();
      if (!block.continues) {
        if (block.kind === "heading") {
          if (runHasContent) finishRun();
          const { level, title } = block.heading ?? { level: 1, title: "" };
          while (headings.length > 0 && headings[headings.length - 1]!.level >= level) headings.pop();
          headings.push({ level, title });
        } else if (at > runStart) {
          blockStarts.push(at);
        }
      }
      if (block.page !== undefined && pages[pages.length - 1]?.page !== block.page)
        pages.push({ at, page: block.page });
      buffer += block.text;
      if (block.kind !== "heading" && !runHasContent && /\S/.test(block.text)) runHasContent = true;
      while (end() - runStart > maxChars) cutOne();
      return out;
    },
    /** Ends the document; returns the last chunks. */
    end(): Chunk[] {
      out = [];
      finishRun();
      return out;
    },
  };
}
