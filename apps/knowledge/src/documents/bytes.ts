import { DocumentError } from "./document-error.ts";

/** The bytes of a file: whole, or as a stream (a Node stream or a web `ReadableStream` are both async iterables). */
export type DocumentBytes = Uint8Array | AsyncIterable<Uint8Array>;

/** Pieces no larger than this are handed on, so a file given whole is still decoded and parsed in steps. */
export const pieceBytes = 64 * 1024;

/** The bytes in pieces of at most {@link pieceBytes}. */
export async function* bytePieces(bytes: DocumentBytes): AsyncIterable<Uint8Array> {
  const sources = bytes instanceof Uint8Array ? [bytes] : bytes;
  for await (const source of sources) {
    for (let at = 0; at < source.length; at += pieceBytes) yield source.subarray(at, at + pieceBytes);
  }
}

/**
 * Text from bytes, in pieces: UTF-8 unless the content type names another charset that the WHATWG Encoding Standard
 * knows (`text/plain; charset=windows-1252`); a byte-order mark at the start is dropped, bytes that are not text in
 * the encoding become U+FFFD (a file with a few bad bytes is still worth reading), and line ends are `\n` (CRLF and
 * lone CR too), so offsets into the text do not depend on where the file was written.
 */
export async function* decodedText(bytes: DocumentBytes, contentType?: string): AsyncIterable<string> {
  const decoder = textDecoder(/;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? "")?.[1]);
  // A CR at the end of a piece may be the first half of a CRLF: it waits for the next piece.
  let heldCR = false;
  const normalize = (text: string, last: boolean): string => {
    let out = heldCR ? `\r${text}` : text;
    heldCR = !last && out.endsWith("\r");
    if (heldCR) out = out.slice(0, -1);
    return out.includes("\r") ? out.replace(/\r\n?/g, "\n") : out;
  };
  for await (const piece of bytePieces(bytes)) {
    const text = normalize(decoder.decode(piece, { stream: true }), false);
    if (text) yield text;
  }
  const rest = normalize(decoder.decode(), true);
  if (rest) yield rest;
}

function textDecoder(charset: string | undefined) {
  try {
    if (charset) return new TextDecoder(charset, { fatal: false, ignoreBOM: false });
  } catch {
    // A charset nobody knows: read as UTF-8, what nearly every text file is.
  }
  return new TextDecoder("utf-8", { fatal: false, ignoreBOM: false });
}

/**
 * All the bytes in one array of the caller's own (a parser may take it over), refusing more than `maxBytes` (for
 * formats that are parsed whole).
 */
export async function wholeBytes(bytes: DocumentBytes, maxBytes: number, what: string): Promise<Uint8Array> {
  const tooLarge = (size: number) =>
    new DocumentError(
      "too_large",
      `${what} is too large to read: ${megabytes(size)} or more, over the limit of ${megabytes(maxBytes)} for files that are read whole`,
    );
  if (bytes instanceof Uint8Array) {
    if (bytes.length > maxBytes) throw tooLarge(bytes.length);
    return bytes.slice();
  }
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const part of bytes) {
    size += part.length;
    // Stop reading at once: the rest of an oversized file is never held.
    if (size > maxBytes) throw tooLarge(size);
    parts.push(part);
  }
  const whole = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    whole.set(part, at);
    at += part.length;
  }
  return whole;
}

function megabytes(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
