import { nameProblem } from "@loom/kit/text";

/**
 * Asset names (semantics.md §7): 1..256 characters, `/` allowed (folders by
 * convention), never a `..` segment, a backslash, a control character or a
 * leading `/` — so no name reads as a path that climbs out of its bucket.
 */
export function assetNameProblem(name: string): string | undefined {
  const bounds = nameProblem(name, 1, 256);
  if (bounds) return bounds;
  if (name.startsWith("/")) return "must not start with /";
  if (name.includes("\\")) return "must not contain a backslash";
  if (name.split("/").includes("..")) return "must not contain a .. segment";
  return undefined;
}
