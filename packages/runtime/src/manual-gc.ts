import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

export type GarbageCollection =
  | { type: "minor" }
  | { type: "major"; execution: "sync"; flavor: "regular" | "last-resort" };

let collector: ((collection: GarbageCollection) => void) | undefined;

/**
 * V8's collector, for the few places that know better than its heuristics
 * when garbage is due (release-memory-when-quiet.ts, streamed-bytes.ts,
 * the knowledge service's ingested-bytes.ts). Taken from a
 * fresh context, so `gc` is not exposed to the rest of the process.
 */
export function collectGarbage(collection: GarbageCollection): void {
  if (!collector) {
    setFlagsFromString("--expose-gc");
    collector = runInNewContext("gc") as (collection: GarbageCollection) => void;
  }
  collector(collection);
}

/**
 * Counts units of work (bytes streamed, text indexed) and asks for `collection` every `per` of them: for work
 * whose garbage V8's own triggers see too late (streamed-bytes.ts, the knowledge service's ingested-bytes.ts).
 */
export function collectionEvery(per: number, collection: GarbageCollection): (count: number) => void {
  let since = 0;
  return (count) => {
    since += count;
    if (since < per) return;
    since = 0;
    collectGarbage(collection);
  };
}
