import { stemmer } from "stemmer";

/**
 * The words of a text, as SQLite's FTS5 tokenizer `porter unicode61 remove_diacritics 2` finds them: runs of
 * letters and digits, diacritics removed, lower case, then Martin Porter's stemmer (so "running" and "runs" are
 * both "run"). The MongoDB index keeps these terms itself; both stores thus match and count the same words.
 */
export function wordsOf(text: string): string[] {
  return (
    text
      .normalize("NFKD")
      .replace(/\p{M}+/gu, "")
      .toLowerCase()
      .match(/[\p{L}\p{N}]+/gu) ?? []
  );
}

/** The index terms of a text, one per word, in order (a text's length in BM25 is their number). */
export const termsOf = (text: string): string[] => wordsOf(text).map((word) => stemmer(word));

/** How many times each term occurs in a text. */
export function termFrequencies(text: string): Map<string, number> {
  const frequencies = new Map<string, number>();
  for (const term of termsOf(text)) frequencies.set(term, (frequencies.get(term) ?? 0) + 1);
  return frequencies;
}

/** The most distinct words a query is searched by; the rest of a longer question is left out. */
export const maxQueryWords = 64;

/**
 * A query's words, one per term (the first word of each), at most `maxQueryWords`, in the order they first appear:
 * "zeppelin zeppelins" is searched as one term, not scored twice.
 */
export function queryWordsOf(query: string): { word: string; term: string }[] {
  const byTerm = new Map<string, string>();
  for (const word of wordsOf(query)) {
    if (byTerm.size === maxQueryWords) break;
    const term = stemmer(word);
    if (!byTerm.has(term)) byTerm.set(term, word);
  }
  return [...byTerm].map(([term, word]) => ({ word, term }));
}
