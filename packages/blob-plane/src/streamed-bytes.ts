import { Transform } from "node:stream";
import { collectionEvery } from "@loom/runtime/manual-gc";

/** How many streamed bytes may become garbage before a young-generation collection frees them. */
export const streamedBytesPerCollection = 16 * 1024 * 1024;

/**
 * Counts bytes a blob stream has moved through this process, and asks for a
 * young-generation collection every `streamedBytesPerCollection` of them.
 * Why: a streamed chunk is a small object holding 64 KiB outside the heap;
 * V8 frees those bytes only when it collects the object, and its own
 * triggers count heap allocation (one collection per semi-space filled) and
 * 64 MB of outside growth. The all-in-one process runs with large
 * semi-spaces (docs/decisions.md, "Node flags"), so without this a
 * transfer's dead chunks piled up to ~90 MB before a collection came.
 * A scavenge with little alive costs well under a millisecond.
 */
export const streamedBytes: (count: number) => void = collectionEvery(streamedBytesPerCollection, { type: "minor" });

/** A pass-through that counts what flows through it (`streamedBytes`): for the bytes a process sends out. */
export function countingStreamedBytes(): Transform {
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      streamedBytes(chunk.length);
      done(null, chunk);
    },
  });
}
