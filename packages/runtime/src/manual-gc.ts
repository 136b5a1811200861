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
