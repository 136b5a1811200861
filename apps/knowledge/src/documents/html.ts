import { Parser } from "htmlparser2";
import { type Block, type BlockKind, blockPieceChars } from "./blocks.ts";

/** Elements whose content is never a document's text: code, styles, navigation, embedded things, the head. */
const skipped = new Set([
  "head",
  "script",
  "style",
  "noscript",
  "template",
  "nav",
  "svg",
  "math",
  "canvas",
  "iframe",
  "object",
  "embed",
  "select",
  "button",
]);

/** Elements that end the text before them and start a new block. */
const blockElements = new Set([
  "address",
  "article",
  "aside",
  "blockquote",
  "body",
  "caption",
  "dd",
  "details",
  "dialog",
  "div",
  "dl",
  "dt",
  "fieldset",
  "figcaption",
  "figure",
  "footer",
  "form",
  "header",
  "hgroup",
  "hr",
  "li",
  "main",
  "ol",
  "p",
  "pre",
  "section",
  "summary",
  "table",
  "ul",
]);

const headingLevels: Record<string, number> = { h1: 1, h2: 2, h3: 3, h4: 4, h5: 5, h6: 6 };

interface OpenBlock {
  kind: BlockKind;
  /** Written before the content: `## ` for a heading, `- ` for a list item, a fence for code. */
  lead: string;
  content: string;
  /** Whether a first piece of this block was already handed on. */
  handedOn: boolean;
  heading?: number;
}

/**
 * Blocks of HTML, from htmlparser2's streaming parser: the text arrives in pieces and leaves in blocks, so an HTML
 * file is never held whole. Scripts, styles, navigation and hidden elements are dropped; the text is written as
 * Markdown would be (`## Heading`, `- item`, fenced `pre`, `| cell | cell |` rows), so a chunk of a web page reads
 * like a chunk of a Markdown file and keeps its headings.
 */
export async function* htmlBlocks(text: AsyncIterable<string>): AsyncIterable<Block> {
  const out: Block[] = [];
  const writer = htmlBlockWriter(out);
  const parser = new Parser(writer, { decodeEntities: true, lowerCaseTags: true, lowerCaseAttributeNames: true });
  for await (const piece of text) {
    parser.write(piece);
    yield* out.splice(0);
  }
  parser.end();
  yield* out.splice(0);
}

function htmlBlockWriter(out: Block[]) {
  /** One entry per open element: whether it (or an ancestor) hides its content. */
  const hidden: boolean[] = [];
  const lists: { ordered: boolean; count: number }[] = [];
  let tableDepth = 0;
  let cellsInRow = 0;
  let preDepth = 0;
  /** Open list items: a paragraph inside one stays part of the item. */
  let itemDepth = 0;
  let block: OpenBlock | undefined;
  let lastKind: BlockKind | undefined;

  const isHidden = () => hidden.length > 0 && hidden[hidden.length - 1] === true;

  const handOn = (last: boolean) => {
    if (!block) return;
    let content =
      block.kind !== "code" ? block.content.trim() : block.handedOn ? block.content : block.content.replace(/^\n/, "");
    if (!block.handedOn && !content.trim()) {
      block = undefined;
      return;
    }
    if (block.kind === "code" && last) content = `${content.replace(/\n+$/, "")}\n\`\`\``;
    if (block.handedOn) {
      out.push({ kind: block.kind, text: block.kind === "code" ? content : ` ${content}`, continues: true });
    } else {
      // Between two list items or two rows one line end, between other blocks a blank line.
      const separator = lastKind === undefined ? "" : lastKind === "list" && block.kind === "list" ? "\n" : "\n\n";
      const text = `${separator}${block.lead}${content}`;
      out.push(
        block.heading
          ? { kind: "heading", text, heading: { level: block.heading, title: content.replace(/\s+/g, " ") } }
          : { kind: block.kind, text },
      );
      lastKind = block.kind;
    }
    block.handedOn = true;
    block.content = "";
    if (last) block = undefined;
  };

  const start = (kind: BlockKind, lead = "", heading?: number) => {
    handOn(true);
    block = { kind, lead, content: "", handedOn: false, ...(heading ? { heading } : {}) };
  };

  const append = (text: string) => {
    block ??= { kind: "paragraph", lead: "", content: "", handedOn: false };
    block.content += text;
    if (block.content.length > blockPieceChars) {
      // A long block leaves in pieces. A "heading" this long is not one (its title would be held whole): it is text.
      if (block.heading) {
        block.kind = "paragraph";
        block.lead = "";
        delete block.heading;
      }
      // At a line's end in code, a space elsewhere; text with neither (a long encoded string) where it is.
      const at = block.kind === "code" ? block.content.lastIndexOf("\n") + 1 : block.content.lastIndexOf(" ");
      const cut = at > 0 ? at : block.content.length;
      const rest = block.content.slice(cut);
      block.content = block.content.slice(0, cut);
      handOn(false);
      block.content = rest;
    }
  };

  /** A space between words, unless one is there already. */
  const space = () => {
    const last = block?.content.at(-1);
    if (last !== undefined && !/\s/.test(last)) append(" ");
  };

  return {
    onopentag(name: string, attributes: Record<string, string>) {
      const hides =
        isHidden() ||
        skipped.has(name) ||
        "hidden" in attributes ||
        attributes["aria-hidden"] === "true" ||
        attributes.role === "navigation";
      hidden.push(hides);
      if (hides) return;
      if (tableDepth > 0) {
        // A table in a cell: its text stays in the cell.
        if (name === "table") tableDepth++;
        if (tableDepth > 1) {
          if (name === "table" || name === "tr" || name === "td" || name === "th" || name === "br") space();
          return;
        }
        if (name === "tr") {
          if (block?.content) append("\n");
          cellsInRow = 0;
        } else if (name === "td" || name === "th") {
          append(cellsInRow++ === 0 ? "| " : " | ");
        } else if (name === "br" || blockElements.has(name)) {
          space();
        }
        return;
      }
      const level = headingLevels[name];
      if (level) return start("heading", `${"#".repeat(level)} `, level);
      if (name === "br") return append(preDepth > 0 ? "" : "\n");
      if (name === "pre") {
        preDepth++;
        return start("code", "```\n");
      }
      if (preDepth > 0) return;
      if (name === "ul" || name === "ol") {
        lists.push({ ordered: name === "ol", count: 0 });
        return handOn(true);
      }
      if (name === "li") {
        itemDepth++;
        const list = lists[lists.length - 1];
        const marker = list?.ordered ? `${++list.count}.` : "-";
        return start("list", `${"  ".repeat(Math.max(lists.length - 1, 0))}${marker} `);
      }
      if (name === "table") {
        tableDepth++;
        cellsInRow = 0;
        return start("table");
      }
      if (name === "hr") return handOn(true);
      if (blockElements.has(name)) return itemDepth > 0 ? space() : handOn(true);
    },

    ontext(text: string) {
      if (isHidden()) return;
      if (preDepth > 0) return append(text);
      const collapsed = text.replace(/\s+/g, " ");
      const content = block?.content ?? "";
      const atLineStart = content === "" || content.endsWith(" ") || content.endsWith("\n");
      append(atLineStart ? collapsed.replace(/^ /, "") : collapsed);
    },

    onclosetag(name: string) {
      const wasHidden = hidden.pop() === true;
      if (wasHidden) return;
      if (tableDepth > 1) {
        if (name === "table") tableDepth--;
        return;
      }
      if (tableDepth > 0 && name !== "table") {
        if (name === "tr" && cellsInRow > 0) append(" |");
        return;
      }
      if (name === "table") {
        tableDepth--;
        return handOn(true);
      }
      if (name === "pre") {
        preDepth--;
        return handOn(true);
      }
      if (preDepth > 0) return;
      if (name === "ul" || name === "ol") {
        lists.pop();
        handOn(true);
        // The next list is another list: a blank line before it, not a line end.
        if (lists.length === 0 && lastKind === "list") lastKind = "other";
        return;
      }
      if (name === "li") itemDepth--;
      else if (itemDepth > 0 && blockElements.has(name) && name !== "ul" && name !== "ol") return space();
      if (headingLevels[name] || blockElements.has(name)) handOn(true);
    },

    onend() {
      handOn(true);
    },
  };
}
