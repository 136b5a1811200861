import { failedPrecondition } from "@loom/contracts/errors";

/** A vector's bytes as stored (a SQLite BLOB, a MongoDB binary): its Float32 values, little-endian as the machine's. */
export const vectorBytes = (vector: Float32Array): Uint8Array =>
  new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength);

/** A stored vector back: a copy, aligned, whatever the offset of the bytes it came in. */
export function vectorOf(bytes: Uint8Array): Float32Array {
  const vector = new Float32Array(bytes.byteLength / 4);
  new Uint8Array(vector.buffer).set(bytes);
  return vector;
}

/** The Euclidean length of a vector. */
export function lengthOf(vector: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += vector[i]! * vector[i]!;
  return Math.sqrt(sum);
}

/**
 * The cosine similarity of the query (given with its length) and a stored vector's bytes, read in place (no copy:
 * an exact scan reads every vector of the knowledge base). 0 when either has length 0.
 */
export function cosineOf(query: Float32Array, queryLength: number, bytes: Uint8Array): number {
  const stored =
    bytes.byteOffset % 4 === 0
      ? new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4)
      : vectorOf(bytes);
  let dot = 0;
  let sum = 0;
  for (let i = 0; i < stored.length; i++) {
    const value = stored[i]!;
    dot += value * query[i]!;
    sum += value * value;
  }
  return sum === 0 || queryLength === 0 ? 0 : dot / (Math.sqrt(sum) * queryLength);
}

/** The one dimension of a set of embeddings (undefined: none has one); failedPrecondition when they differ. */
export function dimensionOf(embeddings: Iterable<Float32Array | undefined>): number | undefined {
  let dimension: number | undefined;
  for (const embedding of embeddings) {
    if (!embedding) continue;
    if (dimension !== undefined && embedding.length !== dimension)
      throw failedPrecondition(
        `the chunks' embeddings have different dimensions (${dimension} and ${embedding.length})`,
      );
    dimension = embedding.length;
  }
  return dimension;
}

/** failedPrecondition unless `given` is the knowledge base's embedding dimension (or it has none yet). */
export function checkDimension(kept: number | undefined, given: number | undefined, what: string): void {
  if (kept !== undefined && given !== undefined && kept !== given)
    throw failedPrecondition(
      `${what} has ${given} dimensions, and the knowledge base's embeddings have ${kept}: re-embed the knowledge base to change its model`,
    );
}

/**
 * The best `limit` of a stream of scored candidates, best first; ties keep the order they came in. Holds `limit`
 * candidates at most, so an exact scan over every chunk of a knowledge base needs no more memory than its answer.
 */
export function bestOf<T>(limit: number) {
  const kept: { item: T; score: number }[] = [];
  return {
    offer(item: T, score: number) {
      if (kept.length === limit && score <= kept[kept.length - 1]!.score) return;
      let at = kept.length;
      while (at > 0 && kept[at - 1]!.score < score) at--;
      kept.splice(at, 0, { item, score });
      if (kept.length > limit) kept.pop();
    },
    best: () => kept,
  };
}
