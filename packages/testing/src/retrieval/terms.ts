/**
 * Words as the corpus checks and the naive keyword baseline see them:
 * lower case, split on anything not a letter or digit, a few English stop
 * words dropped, a plural "s" cut (a stand-in for stemming, enough to tell
 * "rare word shared" from "not shared").
 */
const stopWords = new Set(
  "a an and are as at be by can do does for from has have how in is it its of on or our so that the their them they this to was were what when where which who whose will with".split(
    " ",
  ),
);

export function terms(text: string): string[] {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])
    .filter((word) => word.length > 1 && !stopWords.has(word))
    .map((word) => (word.length > 3 && word.endsWith("s") && !word.endsWith("ss") ? word.slice(0, -1) : word));
}

/** In how many of the texts each term occurs. */
export function documentFrequencies(texts: string[]): Map<string, number> {
  const frequencies = new Map<string, number>();
  for (const text of texts)
    for (const term of new Set(terms(text))) frequencies.set(term, (frequencies.get(term) ?? 0) + 1);
  return frequencies;
}
