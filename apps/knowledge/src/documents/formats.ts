import { DocumentError } from "./document-error.ts";

/** The kinds of file a knowledge base reads. */
export type DocumentFormat = "text" | "markdown" | "html" | "pdf";

const byContentType: Record<string, DocumentFormat> = {
  "text/markdown": "markdown",
  "text/x-markdown": "markdown",
  "text/html": "html",
  "application/xhtml+xml": "html",
  "application/pdf": "pdf",
  "application/x-pdf": "pdf",
};

const byExtension: Record<string, DocumentFormat> = {
  txt: "text",
  text: "text",
  log: "text",
  csv: "text",
  tsv: "text",
  md: "markdown",
  markdown: "markdown",
  mdown: "markdown",
  mkd: "markdown",
  html: "html",
  htm: "html",
  xhtml: "html",
  pdf: "pdf",
};

/** Content types that say nothing about the format: the name's extension decides. */
const generic = new Set(["", "application/octet-stream", "binary/octet-stream", "text/plain"]);

/**
 * The format of an asset from its content type and its name. A specific content type wins (`text/markdown`,
 * `text/html`, `application/pdf`); a generic one (none, `application/octet-stream`, `text/plain` — what most uploads of
 * a Markdown file are given) leaves it to the extension; any other `text/*` is plain text. Anything else is a
 * {@link DocumentError} naming what was seen.
 */
export function documentFormat(name: string, contentType?: string): DocumentFormat {
  const type = (contentType ?? "").split(";", 1)[0]!.trim().toLowerCase();
  const specific = byContentType[type];
  if (specific) return specific;
  const dot = name.lastIndexOf(".");
  const extension = dot > name.lastIndexOf("/") && dot >= 0 ? name.slice(dot + 1).toLowerCase() : "";
  if (generic.has(type)) {
    const fromName = byExtension[extension];
    if (fromName) return fromName;
    if (type === "text/plain") return "text";
  } else if (type.startsWith("text/")) {
    return "text";
  }
  throw new DocumentError(
    "unsupported_type",
    `${JSON.stringify(name)} is not a supported document (content type ${JSON.stringify(type || "none")}${
      extension ? `, extension .${extension}` : ""
    }): knowledge bases read plain text, Markdown, HTML and PDF`,
  );
}
