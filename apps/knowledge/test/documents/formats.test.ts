import { describe, expect, it } from "vitest";
import { DocumentError } from "../../src/documents/document-error.ts";
import { documentChunks } from "../../src/documents/documents.ts";
import { documentFormat } from "../../src/documents/formats.ts";
import { collect, encode } from "./chunk-checks.ts";

describe("the format of a file", () => {
  it("is the content type's when it names one", () => {
    expect(documentFormat("notes", "text/markdown; charset=utf-8")).toBe("markdown");
    expect(documentFormat("page.txt", "text/html")).toBe("html");
    expect(documentFormat("scan", "application/pdf")).toBe("pdf");
    expect(documentFormat("data.csv", "text/csv")).toBe("text");
  });

  it("is the extension's when the content type is generic or missing", () => {
    expect(documentFormat("docs/install.md", "text/plain")).toBe("markdown");
    expect(documentFormat("docs/INDEX.HTM", "application/octet-stream")).toBe("html");
    expect(documentFormat("report.pdf")).toBe("pdf");
    expect(documentFormat("readme.txt", "")).toBe("text");
    expect(documentFormat("LICENSE", "text/plain")).toBe("text");
  });

  it("is refused with a message naming the file and what was seen, for anything else", () => {
    for (const [name, type] of [
      ["logo.png", "image/png"],
      ["archive.zip", undefined],
      ["dir.md/noextension", undefined],
      ["notes.txt", "application/zip"],
    ] as const) {
      let error: unknown;
      try {
        documentFormat(name, type);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(DocumentError);
      expect((error as DocumentError).reason).toBe("unsupported_type");
      expect((error as DocumentError).message).toContain(JSON.stringify(name));
      expect((error as DocumentError).message).toContain("plain text, Markdown, HTML and PDF");
    }
  });

  it("of an unsupported file fails its chunks, as a per-file error, not a crash", async () => {
    const error = await collect(
      documentChunks({ name: "photo.jpg", contentType: "image/jpeg", bytes: encode("x") }),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DocumentError);
    expect((error as DocumentError).message).toMatch(
      /"photo\.jpg" is not a supported document \(content type "image\/jpeg", extension \.jpg\)/,
    );
  });
});
