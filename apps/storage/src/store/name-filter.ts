import type { AssetFilter } from "./port.ts";

/** ListAssets' `prefix` / `postfix` filter (semantics.md §7), for the memory store. */
export const nameMatches = (name: string, filter: AssetFilter): boolean => name.startsWith(filter.prefix) && name.endsWith(filter.postfix);

/** The same filter as MongoDB regular expressions: every character taken literally. */
export function nameFilterQuery(filter: AssetFilter): Record<string, unknown> {
  const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  const patterns = [filter.prefix && `^${literal(filter.prefix)}`, filter.postfix && `${literal(filter.postfix)}$`].filter(Boolean) as string[];
  if (patterns.length === 0) return {};
  return patterns.length === 1 ? { name: { $regex: patterns[0] } } : { $and: patterns.map((p) => ({ name: { $regex: p } })) };
}
