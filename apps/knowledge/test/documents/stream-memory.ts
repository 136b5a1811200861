/**
 * Run as its own process with the service's Node flags (see large.test.ts): reads a generated file of the given kind
 * and size through extract+chunk and prints, as JSON, the chunks, the time and the peak RSS over the RSS before.
 */
import { documentChunks } from "../../src/documents/documents.ts";
import { generatedFile, mebibyte, pieces } from "./generated-files.ts";

const kind = process.argv[2] as keyof typeof pieces;
const megabytes = Number(process.argv[3]);
const bytes = generatedFile(kind, megabytes);
const before = process.memoryUsage().rss;
let peak = before;
let chunks = 0;
const started = performance.now();
for await (const _chunk of documentChunks({ name: `large.${kind}`, bytes })) {
  if (++chunks % 1000 === 0) peak = Math.max(peak, process.memoryUsage().rss);
}
const seconds = (performance.now() - started) / 1000;
peak = Math.max(peak, process.memoryUsage().rss);
console.log(JSON.stringify({ chunks, seconds, rssBefore: before / mebibyte, rssGrowth: (peak - before) / mebibyte }));
