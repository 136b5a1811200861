import { charLength } from "@loom/contracts/text";
import type { AssetFilter } from "./port.ts";

/**
 * The least string above every string that starts with `prefix`: its last
 * character stepped up by one (code point order is UTF-8 byte order, which is
 * how SQLite compares text). None when every character is already the last.
 */
function prefixEnd(prefix: string): string | undefined {
  const chars = [...prefix];
  while (chars.length > 0 && chars.at(-1)!.codePointAt(0) === 0x10ffff) chars.pop();
  if (chars.length === 0) return undefined;
  const last = chars.pop()!.codePointAt(0)! + 1;
  return chars.join("") + String.fromCodePoint(last === 0xd800 ? 0xe000 : last); // no surrogates in UTF-8
}

/**
 * ListAssets' `prefix` / `postfix` filter (docs/behaviour.md §7) as SQL on `name`,
 * every character taken literally (no LIKE: its wildcards and case folding).
 * The prefix is a range on the (bucket_id, name) index; the postfix compares
 * the name's last characters. Empty parts add nothing, so the SQL text takes
 * one of four shapes (each a cached statement).
 */
export function nameFilterSql(filter: AssetFilter): { where: string; params: (string | number)[] } {
  const where: string[] = [];
  const params: (string | number)[] = [];
  if (filter.prefix) {
    const end = prefixEnd(filter.prefix);
    where.push(end === undefined ? "name >= ?" : "name >= ? AND name < ?");
    params.push(filter.prefix, ...(end === undefined ? [] : [end]));
  }
  if (filter.postfix) {
    where.push("substr(name, -?) = ?");
    params.push(charLength(filter.postfix), filter.postfix);
  }
  return { where: where.map((w) => ` AND ${w}`).join(""), params };
}

/** The same filter as MongoDB regular expressions: every character taken literally. */
export function nameFilterQuery(filter: AssetFilter): Record<string, unknown> {
  const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  const patterns = [
    filter.prefix && `^${literal(filter.prefix)}`,
    filter.postfix && `${literal(filter.postfix)}$`,
  ].filter(Boolean) as string[];
  if (patterns.length === 0) return {};
  return patterns.length === 1
    ? { name: { $regex: patterns[0] } }
    : { $and: patterns.map((p) => ({ name: { $regex: p } })) };
}
