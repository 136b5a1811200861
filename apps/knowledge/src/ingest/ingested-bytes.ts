import { collectionEvery } from "@loom/runtime/manual-gc";

/** How much text ingest jobs may put into the index before a full collection frees what their files left. */
export const ingestedBytesPerCollection = 8 * 1024 * 1024;

/**
 * Counts the text ingest jobs have indexed in this process, and asks for a full collection every
 * `ingestedBytesPerCollection` of it. Why: a file's chunks stay alive until its one transaction commits, long
 * enough for V8 to promote them, so they die in the old generation; at the rate a job ingests, V8's own
 * heuristics let the heap grow to ~350 MB before collecting it, and the all-in-one's RSS went from 190 MB to
 * 420–500 MB during a 100 MB ingest. One collection per 8 MiB (~55 ms on that heap, about 1% of the job's
 * time) keeps it under 250 MB (docs/benchmarks.md, "Knowledge: memory during an ingest").
 */
export const ingestedBytes: (count: number) => void = collectionEvery(ingestedBytesPerCollection, {
  type: "major",
  execution: "sync",
  flavor: "regular",
});
