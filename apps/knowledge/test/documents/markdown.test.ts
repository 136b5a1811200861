import { describe, expect, it } from "vitest";
import { defaultChunkOptions } from "../../src/documents/chunk.ts";
import { documentChunks } from "../../src/documents/documents.ts";
import { collect, encode, expectChunkRules, paragraph, read } from "./chunk-checks.ts";

const markdown = (text: string) => () => ({ name: "guide.md", contentType: "text/markdown", bytes: encode(text) });

async function* pieces(bytes: Uint8Array, size: number): AsyncIterable<Uint8Array> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

const guide = `# Loom guide

Loom answers from your files.

## Install

### Linux

${paragraph(1, 4)}

\`\`\`sh
# not a heading: a comment in a shell script
curl -fsSL https://example.invalid/install.sh | sh
\`\`\`

### macOS

- Install **Homebrew** first
- Run \`brew install loom\`
  - then \`loom start\`

## Configure \`loom.yaml\`

| setting | meaning |
| ------- | ------- |
| port    | where Loom listens |
| data    | the data directory |

> A quote about configuration.

Setext title
------------

${paragraph(2, 3)}
`;

describe("Markdown", () => {
  it("keeps the source text and gives each chunk its heading path", async () => {
    const { chunks, extracted } = await read(markdown(guide));
    expect(extracted).toBe(guide);
    expectChunkRules(chunks, extracted, defaultChunkOptions);
    const byStart = (text: string) => chunks.find((chunk) => chunk.text.startsWith(text));
    expect(byStart("# Loom guide")?.headingPath).toEqual(["Loom guide"]);
    // A heading with nothing under it but another heading starts the chunk of the one below.
    expect(byStart("## Install\n\n### Linux")?.headingPath).toEqual(["Loom guide", "Install", "Linux"]);
    expect(byStart("### macOS")?.headingPath).toEqual(["Loom guide", "Install", "macOS"]);
    // Inline Markdown is left out of the path; the code block's `#` line is not a heading.
    expect(byStart("## Configure")?.headingPath).toEqual(["Loom guide", "Configure loom.yaml"]);
    // A setext heading underlined with dashes is a second level, like "Configure".
    expect(byStart("Setext title")?.headingPath).toEqual(["Loom guide", "Setext title"]);
    expect(chunks.some((chunk) => chunk.headingPath.some((title) => title.includes("not a heading")))).toBe(false);
    // Lists, code and tables are kept whole, as written.
    expect(byStart("### Linux") ?? byStart("## Install")).toBeDefined();
    expect(chunks.some((chunk) => chunk.text.includes("```sh\n# not a heading"))).toBe(true);
    expect(byStart("### macOS")?.text).toContain("- Run `brew install loom`\n  - then `loom start`");
    expect(byStart("## Configure")?.text).toContain(
      "| port    | where Loom listens |\n| data    | the data directory |",
    );
  });

  it("cuts a long section at its blocks, and a long code block at its lines", async () => {
    const code = Array.from({ length: 80 }, (_, i) => `  step_${i}(input, output)  # ${i}`).join("\n");
    const text = `# Long\n\n${paragraph(5, 8)}\n\n${paragraph(6, 8)}\n\n\`\`\`python\n${code}\n\`\`\`\n\n${paragraph(7, 3)}\n`;
    const { chunks, extracted } = await read(markdown(text));
    expectChunkRules(chunks, extracted, defaultChunkOptions);
    for (const chunk of chunks) expect(chunk.headingPath).toEqual(["Long"]);
    const inCode = chunks.filter((chunk) => chunk.text.includes("step_40"));
    expect(inCode.length).toBeGreaterThan(0);
    // Inside the code block chunks end at a line's end.
    for (const chunk of chunks.filter((c) => c.text.includes("step_") && !c.text.endsWith("```"))) {
      expect(extracted[chunk.end] === "\n" || chunk.text.endsWith(")") || /# \d+$/.test(chunk.text)).toBe(true);
    }
  });

  it("does not carry a chunk across headings, nor an overlap into another section", async () => {
    const options = { maxChars: 300, overlapChars: 60 };
    const text = `# A\n\n${paragraph(1, 10)}\n\n# B\n\n${paragraph(2, 10)}\n`;
    const { chunks, extracted } = await read(markdown(text), options);
    expectChunkRules(chunks, extracted, options);
    const firstOfB = chunks.findIndex((chunk) => chunk.headingPath[0] === "B");
    expect(chunks[firstOfB]!.text.startsWith("# B")).toBe(true);
    expect(chunks[firstOfB]!.start).toBeGreaterThanOrEqual(chunks[firstOfB - 1]!.end);
    expect(chunks.slice(0, firstOfB).every((chunk) => chunk.headingPath[0] === "A")).toBe(true);
  });

  it("reads a large file in windows with the same chunks as whole, headings carried and fences kept", async () => {
    // A code fence longer than a window, with lines that would be headings outside it.
    const fence = Array.from({ length: 40_000 }, (_, i) => (i % 50 === 0 ? `# comment ${i}\n` : `x = ${i}\n`)).join("");
    const sections = Array.from(
      { length: 60 },
      (_, i) => `## Part ${i}\n\n${paragraph(i, 30)}\n\n${i === 30 ? `\`\`\`\n${fence}\`\`\`\n\n` : ""}`,
    );
    const text = `# Book\n\n${sections.join("")}`;
    // The fence is longer than the longest window (four times 64 KiB): a window is cut inside it.
    expect(fence.length).toBeGreaterThan(4 * 64 * 1024);
    const whole = await read(markdown(text));
    expect(whole.extracted).toBe(text);
    expectChunkRules(whole.chunks, whole.extracted, defaultChunkOptions);
    const streamed = await collect(documentChunks({ name: "book.md", bytes: pieces(encode(text), 997) }));
    expect(streamed).toEqual(whole.chunks);
    for (const chunk of whole.chunks) {
      expect(chunk.headingPath[0]).toBe("Book");
      expect(chunk.headingPath.length).toBe(2);
      expect(chunk.headingPath[1]).toMatch(/^Part \d+$/);
    }
    const afterFence = whole.chunks.find((chunk) => chunk.text.startsWith("## Part 31"));
    expect(afterFence?.headingPath).toEqual(["Book", "Part 31"]);
    expect(
      whole.chunks.filter((chunk) => chunk.text.includes("x = 39000")).every((c) => c.headingPath[1] === "Part 30"),
    ).toBe(true);
  });

  it("gives no chunks for an empty file", async () => {
    expect(await collect(documentChunks(markdown("")()))).toEqual([]);
    expect(await collect(documentChunks(markdown("\n\n   \n")()))).toEqual([]);
  });
});
