import { Transform } from "node:stream";
import { BlobTooLarge } from "./port.ts";

/** Counts bytes as they pass and fails the pipeline past the limit, before the rest arrives (both blob stores). */
export function byteLimit(maxBytes: number): Transform {
  let bytes = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      done(bytes > maxBytes ? new BlobTooLarge(maxBytes) : null, chunk);
    },
  });
}
