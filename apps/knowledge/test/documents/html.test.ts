import { describe, expect, it } from "vitest";
import { defaultChunkOptions } from "../../src/documents/chunk.ts";
import { documentChunks } from "../../src/documents/documents.ts";
import { collect, encode, expectChunkRules, paragraph, read } from "./chunk-checks.ts";

const html = (text: string) => () => ({
  name: "page.html",
  contentType: "text/html; charset=utf-8",
  bytes: encode(text),
});

const page = `<!doctype html>
<html><head><title>Loom</title><style>body { color: red }</style><script>var secret = "script text";</script></head>
<body>
<nav><a href="/">Front page</a> <a href="/docs">Docs</a></nav>
<div role="navigation">Breadcrumbs here</div>
<main>
<h1>Loom <small>guide</small></h1>
<p>Loom answers from your <b>own</b> files &amp; folders.
   Whitespace   collapses.</p>
<h2>Install</h2>
<h3>Linux</h3>
<p>Use the script.<br>Then start it.</p>
<pre><code>curl -fsSL https://example.invalid/install.sh | sh
  loom start</code></pre>
<h3>macOS</h3>
<ul><li>Install Homebrew<li><p>Run brew</p><ul><li>nested item</li></ul></li></ul>
<ol><li>first</li><li>second</li></ol>
<h2>Settings</h2>
<table><tr><th>setting</th><th>meaning</th></tr><tr><td>port</td><td>where Loom <i>listens</i></td></tr></table>
<p hidden>Hidden paragraph</p><div aria-hidden="true">Decoration</div>
<noscript>Enable JavaScript</noscript>
</main>
<script>console.log("more script")</script>
</body></html>`;

describe("HTML", () => {
  it("keeps the text, headings, lists, code and tables, and drops scripts, styles, navigation and hidden parts", async () => {
    const { chunks, extracted } = await read(html(page));
    expectChunkRules(chunks, extracted, defaultChunkOptions);
    expect(extracted).toBe(
      [
        "# Loom guide",
        "Loom answers from your own files & folders. Whitespace collapses.",
        "## Install",
        "### Linux",
        "Use the script.\nThen start it.",
        "```\ncurl -fsSL https://example.invalid/install.sh | sh\n  loom start\n```",
        "### macOS",
        "- Install Homebrew\n- Run brew\n  - nested item",
        "1. first\n2. second",
        "## Settings",
        "| setting | meaning |\n| port | where Loom listens |",
      ].join("\n\n"),
    );
    for (const hidden of [
      "script text",
      "more script",
      "color: red",
      "Front page",
      "Breadcrumbs",
      "Hidden",
      "Decoration",
      "JavaScript",
    ]) {
      expect(extracted).not.toContain(hidden);
    }
    const byStart = (text: string) => chunks.find((chunk) => chunk.text.startsWith(text));
    expect(byStart("# Loom guide")?.headingPath).toEqual(["Loom guide"]);
    expect(byStart("## Install\n\n### Linux")?.headingPath).toEqual(["Loom guide", "Install", "Linux"]);
    expect(byStart("### macOS")?.headingPath).toEqual(["Loom guide", "Install", "macOS"]);
    expect(byStart("## Settings")?.headingPath).toEqual(["Loom guide", "Settings"]);
  });

  it("is read as a stream: a long page gives the same chunks in small pieces, and long text is cut within the size", async () => {
    const body = Array.from(
      { length: 200 },
      (_, i) => `<h2>Section ${i}</h2><p>${paragraph(i, 12)}</p><div><span>${paragraph(i + 1000, 5)}</span></div>`,
    ).join("\n");
    const text = `<html><body><h1>Long</h1>${body}<pre>${"line of code\n".repeat(20_000)}</pre></body></html>`;
    const whole = await read(html(text));
    expectChunkRules(whole.chunks, whole.extracted, defaultChunkOptions);
    async function* pieces(): AsyncIterable<Uint8Array> {
      const bytes = encode(text);
      for (let at = 0; at < bytes.length; at += 1013) yield bytes.subarray(at, at + 1013);
    }
    expect(await collect(documentChunks({ name: "long.htm", bytes: pieces() }))).toEqual(whole.chunks);
    expect(whole.chunks.find((chunk) => chunk.text.startsWith("## Section 150"))?.headingPath).toEqual([
      "Long",
      "Section 150",
    ]);
    expect(whole.extracted.endsWith("line of code\nline of code\n```")).toBe(true);
  });

  it("never holds a long element whole: a giant heading is read as text, a string with no spaces is cut", async () => {
    const text = `<h1>${"word ".repeat(30_000)}</h1><p>${"x".repeat(200_000)}</p><h2>After</h2><p>end</p>`;
    const { chunks, extracted } = await read(html(text));
    expect(chunks.every((chunk) => chunk.text.length <= defaultChunkOptions.maxChars)).toBe(true);
    expect(chunks.filter((chunk) => chunk.text.includes("word")).every((chunk) => chunk.headingPath.length === 0)).toBe(
      true,
    );
    expect(chunks.at(-1)).toMatchObject({ text: "## After\n\nend", headingPath: ["After"] });
    expect(extracted.replace(/\s/g, "").length).toBe("word".length * 30_000 + 200_000 + "##Afterend".length);
  });

  it("reads broken HTML as a browser would, more or less, and an empty page as no chunks", async () => {
    const { extracted } = await read(html("<p>one<p>two <b>bold<i>both</b> after</i><div>three"));
    expect(extracted).toBe("one\n\ntwo boldboth after\n\nthree");
    const nested = await read(html("<table><tr><td>a<table><tr><td>inner</table><td>b<tr><td>c</table><p>after"));
    expect(nested.extracted).toBe("| a inner | b |\n| c |\n\nafter");
    expect(await collect(documentChunks(html("<html><head><script>x</script></head><body> </body></html>")()))).toEqual(
      [],
    );
  });
});
