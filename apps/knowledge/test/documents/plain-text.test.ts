import { describe, expect, it } from "vitest";
import { defaultChunkOptions } from "../../src/documents/chunk.ts";
import { documentChunks } from "../../src/documents/documents.ts";
import { collect, encode, expectChunkRules, paragraph, read } from "./chunk-checks.ts";

const asText = (bytes: Uint8Array | AsyncIterable<Uint8Array>) => () => ({ name: "notes.txt", bytes });

async function* oneByteAtATime(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  for (let i = 0; i < bytes.length; i++) yield bytes.subarray(i, i + 1);
}

describe("plain text", () => {
  it("is cut where paragraphs end, within the size, and loses no text", async () => {
    const paragraphs = Array.from({ length: 30 }, (_, i) => paragraph(i, 1 + (i % 12)));
    const { chunks, extracted } = await read(asText(encode(paragraphs.join("\n\n"))));
    expectChunkRules(chunks, extracted, defaultChunkOptions);
    expect(chunks.length).toBeGreaterThan(5);
    // A chunk of short paragraphs ends where one of them ends.
    for (const chunk of chunks.slice(0, -1)) {
      const next = extracted.slice(chunk.end, chunk.end + 2);
      expect([".", "\n\n"].some((end) => chunk.text.endsWith(end) || next === end)).toBe(true);
    }
    // Chunks are not crumbs: all but the last of each run are past half the size.
    expect(chunks.slice(0, -1).every((chunk) => chunk.text.length > defaultChunkOptions.maxChars / 2 - 2)).toBe(true);
  });

  it("keeps smaller sizes and overlaps when asked", async () => {
    const options = { maxChars: 200, overlapChars: 40 };
    const { chunks, extracted } = await read(asText(encode(paragraph(3, 60))), options);
    expectChunkRules(chunks, extracted, options);
    expect(chunks.length).toBeGreaterThan(10);
    const overlapping = chunks.slice(1).filter((chunk, i) => chunk.start < chunks[i]!.end);
    expect(overlapping.length).toBe(chunks.length - 1);
  });

  it("overlaps not at all when asked for none", async () => {
    const options = { maxChars: 300, overlapChars: 0 };
    const { chunks, extracted } = await read(asText(encode(paragraph(4, 40))), options);
    expectChunkRules(chunks, extracted, options);
    expect(chunks.slice(1).every((chunk, i) => chunk.start >= chunks[i]!.end)).toBe(true);
  });

  it("refuses sizes it cannot keep", async () => {
    for (const options of [{ maxChars: 10 }, { maxChars: 200, overlapChars: 150 }, { overlapChars: -1 }]) {
      await expect(collect(documentChunks({ name: "a.txt", bytes: encode("x") }, options))).rejects.toThrow(RangeError);
    }
  });

  it("starts an overlap at a sentence's start when one is in reach", async () => {
    const options = { maxChars: 200, overlapChars: 40 };
    const short = Array.from({ length: 80 }, (_, i) => `Fact ${i} holds.`).join(" ");
    const { chunks, extracted } = await read(asText(encode(short)), options);
    expectChunkRules(chunks, extracted, options);
    for (const chunk of chunks.slice(1)) expect(chunk.text).toMatch(/^Fact \d+ holds\./);
    expect(chunks.slice(1).every((chunk, i) => chunk.start < chunks[i]!.end)).toBe(true);
  });

  it("drops a byte-order mark, reads CRLF as LF and replaces bytes that are not UTF-8", async () => {
    const bytes = new Uint8Array([
      0xef,
      0xbb,
      0xbf,
      ...encode("Caf\u00e9 au lait\r\nsecond line\r"),
      0xff,
      0xc3,
      ...encode(" end\rlast"),
    ]);
    const { chunks, extracted } = await read(asText(bytes));
    expect(extracted).toBe("Caf\u00e9 au lait\nsecond line\n\ufffd\ufffd end\nlast");
    expect(chunks.map((chunk) => [chunk.text, chunk.start])).toEqual([[extracted, 0]]);
  });

  it("reads another encoding when the content type names it, and UTF-8 when it names none it knows", async () => {
    const latin1 = new Uint8Array([0x43, 0x61, 0x66, 0xe9]);
    const read = async (contentType: string) =>
      (await collect(documentChunks({ name: "notes.txt", contentType, bytes: latin1 }))).map((chunk) => chunk.text);
    expect(await read("text/plain; charset=ISO-8859-1")).toEqual(["Caf\u00e9"]);
    expect(await read('text/plain; charset="windows-1252"')).toEqual(["Caf\u00e9"]);
    expect(await read("text/plain; charset=no-such-charset")).toEqual(["Caf\ufffd"]);
    expect(await read("text/plain")).toEqual(["Caf\ufffd"]);
  });

  it("reads the same from a stream cut anywhere, even inside a character or a CRLF", async () => {
    const text = `\ufeffZürich 東京 \u{1F600} naïve\r\n\r\n${paragraph(9, 20)}\r\n\r\n${paragraph(10, 20)}`;
    const whole = await read(asText(encode(text)));
    const streamed = await collect(documentChunks({ name: "notes.txt", bytes: oneByteAtATime(encode(text)) }));
    expect(streamed).toEqual(whole.chunks);
    expect(whole.chunks[0]!.text.startsWith("Zürich 東京 \u{1F600} naïve\n\n")).toBe(true);
  });

  it("stops reading the file when its reader stops (a cancelled job)", async () => {
    let sent = 0;
    let closed = false;
    async function* endless(): AsyncIterable<Uint8Array> {
      try {
        for (;;) {
          const bytes = encode(`${paragraph(sent, 5)}\n\n`);
          sent += bytes.length;
          yield bytes;
        }
      } finally {
        closed = true;
      }
    }
    for (const format of ["notes.txt", "notes.md", "notes.html"]) {
      sent = 0;
      closed = false;
      for await (const _chunk of documentChunks({ name: format, bytes: endless() })) break;
      expect(closed).toBe(true);
      // At most a Markdown window (64 KiB) and a piece was read.
      expect(sent).toBeLessThan(96 * 1024);
    }
  });

  it("gives no chunks for an empty file, a BOM alone, or whitespace", async () => {
    for (const bytes of [new Uint8Array(), new Uint8Array([0xef, 0xbb, 0xbf]), encode(" \n\n\t\n")]) {
      expect(await collect(documentChunks({ name: "empty.txt", bytes }))).toEqual([]);
    }
  });

  it("never splits a surrogate pair, and cuts text without spaces between words", async () => {
    const options = { maxChars: 120, overlapChars: 20 };
    const cjk = "東京は日本の首都であり世界最大の都市圏を持つ大都市です".repeat(12);
    const emoji = "\u{1F600}".repeat(200);
    for (const text of [cjk, emoji, "x".repeat(1000)]) {
      const { chunks, extracted } = await read(asText(encode(text)), options);
      expect(chunks.map((chunk) => chunk.text).join("").length).toBeGreaterThanOrEqual(extracted.length);
      for (const chunk of chunks) {
        expect(chunk.text.length).toBeLessThanOrEqual(options.maxChars);
        expect(chunk.text).toBe(extracted.slice(chunk.start, chunk.end));
        expect(chunk.text).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
      }
    }
    // Japanese is cut where Unicode's word rules put a boundary, not every 120 code units.
    const { chunks } = await read(asText(encode(cjk)), options);
    const words = new Intl.Segmenter("ja", { granularity: "word" });
    const boundaries = new Set([...words.segment(cjk)].map((segment) => segment.index));
    for (const chunk of chunks.slice(0, -1)) expect(boundaries.has(chunk.end)).toBe(true);
  });
});
