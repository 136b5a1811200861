import { encode, paragraph } from "./chunk-checks.ts";

export const mebibyte = 1024 * 1024;

/** What each kind of generated file is made of, a piece at a time. */
export const pieces = {
  txt: (i: number) => `${paragraph(i, 1 + (i % 7))}\n\n`,
  md: (i: number) =>
    i % 40 === 0 ? `# Chapter ${i / 40}\n\n` : i % 8 === 0 ? `## Section ${i}\n\n` : `${paragraph(i, 1 + (i % 6))}\n\n`,
  html: (i: number) => (i % 10 === 0 ? `<h2>Part ${i}</h2>\n\n` : `<p>${paragraph(i, 1 + (i % 6))}</p>\n\n`),
};

/**
 * A file of `megabytes` handed on a mebibyte at a time, as a stored asset is read: four different mebibytes made once,
 * each sent many times, so the file itself is never held and making it costs nothing in the figures.
 */
export async function* generatedFile(kind: keyof typeof pieces, megabytes: number): AsyncIterable<Uint8Array> {
  const pool: Uint8Array[] = [];
  let i = 0;
  for (let p = 0; p < 4; p++) {
    let text = "";
    while (text.length < mebibyte) text += pieces[kind](i++);
    // Cut at a paragraph's end, so the pieces join as whole paragraphs.
    pool.push(encode(text.slice(0, text.lastIndexOf("\n\n", mebibyte) + 2)));
  }
  for (let sent = 0; sent < megabytes; sent++) yield pool[sent % pool.length]!;
}
