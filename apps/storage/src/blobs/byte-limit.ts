import { Transform } from "node:stream";
import { streamedBytes } from "@loom/blob-plane/streamed-bytes";
import { BlobTooLarge } from "./port.ts";

/**
 * Counts bytes as they pass and fails the pipeline past the limit, before the
 * rest arrives; with `expected`, also when the body ends at another length
 * (an upload cut short). Both blob stores put every upload through it, so it
 * also counts the bytes for the collector (kit `streamedBytes`).
 */
export function byteLimit(maxBytes: number, expected?: number): Transform {
  let bytes = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      streamedBytes(chunk.length);
      done(bytes > maxBytes ? new BlobTooLarge(maxBytes) : null, chunk);
    },
    flush(done) {
      done(
        expected !== undefined && bytes !== expected
          ? new Error(`the body ended after ${bytes} of its ${expected} bytes`)
          : null,
      );
    },
  });
}
