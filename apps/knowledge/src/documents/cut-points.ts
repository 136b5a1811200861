/**
 * Where a run of text may be cut, strongest first. Every function takes a string and a window `(from, to]` of indices
 * into it and returns the last cut in the window, or -1. A cut at `i` means the chunk ends before `text[i]`.
 */

/** After a blank line. */
export function blankLineCut(text: string, from: number, to: number): number {
  const at = text.lastIndexOf("\n\n", to - 2);
  return at >= 0 && at + 2 > from ? at + 2 : -1;
}

/** After a line end. */
export function lineCut(text: string, from: number, to: number): number {
  const at = text.lastIndexOf("\n", to - 1);
  return at >= 0 && at + 1 > from ? at + 1 : -1;
}

/**
 * The end of a sentence: `.`, `!`, `?` or `…` (with closing quotes or brackets) then whitespace, or the ideographic
 * marks, which need no space after them.
 */
const sentenceEnd = /[.!?…]["'”’)\]]*\s+|[。！？][」』”’)]*\s*/g;

/** At the start of a sentence. */
export function sentenceCut(text: string, from: number, to: number): number {
  let cut = -1;
  sentenceEnd.lastIndex = Math.max(from - 8, 0);
  for (let match = sentenceEnd.exec(text); match && match.index < to; match = sentenceEnd.exec(text)) {
    const end = match.index + match[0].length;
    if (end > from && end <= to) cut = end;
  }
  return cut;
}

/** The first sentence start in `[from, to)`, or -1. */
export function firstSentenceStart(text: string, from: number, to: number): number {
  sentenceEnd.lastIndex = Math.max(from - 8, 0);
  for (let match = sentenceEnd.exec(text); match && match.index < to; match = sentenceEnd.exec(text)) {
    const end = match.index + match[0].length;
    if (end >= from && end < to) return end;
  }
  return -1;
}

const isSpace = (char: string | undefined) => char !== undefined && /\s/.test(char);

/** Before whitespace. */
export function spaceCut(text: string, from: number, to: number): number {
  for (let at = to - 1; at > from; at--) if (isSpace(text[at]) && !isSpace(text[at - 1])) return at;
  return -1;
}

/** The first word start in `[from, to)` (a non-space after a space), or -1. */
export function firstWordStart(text: string, from: number, to: number): number {
  for (let at = Math.max(from, 1); at < to; at++) if (!isSpace(text[at]) && isSpace(text[at - 1])) return at;
  return -1;
}

const words = new Intl.Segmenter(undefined, { granularity: "word" });

/**
 * Between two words as Unicode's rules see them (Intl.Segmenter), for text written without spaces (Chinese,
 * Japanese, Thai); failing that, a long unbroken string is cut at `to`, but never between the two halves of a
 * surrogate pair.
 */
export function lastResortCut(text: string, from: number, to: number): number {
  let cut = -1;
  const window = text.slice(from, to);
  for (const segment of words.segment(window)) if (segment.index > 0) cut = from + segment.index;
  if (cut > from) return cut;
  const code = text.charCodeAt(to - 1);
  return code >= 0xd800 && code <= 0xdbff ? to - 1 : to;
}
