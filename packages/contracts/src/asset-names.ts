import { nameProblem } from "./text.ts";

/**
 * Asset names (docs/behaviour.md §7): 1..256 characters, `/` allowed (folders by
 * convention), never a backslash, a control character, a leading `/`, or a
 * segment that is `..`, `.` or empty (`a//b`, a trailing `/`). Clients and
 * proxies rewrite such paths (dot segments removed, slashes merged), so a name
 * with one would be reached as another asset's name (docs/decisions.md,
 * "Storage"); and no name reads as a path that climbs out of its bucket.
 */
export function assetNameProblem(name: string): string | undefined {
  const bounds = nameProblem(name, 1, 256);
  if (bounds) return bounds;
  if (name.startsWith("/")) return "must not start with /";
  if (name.includes("\\")) return "must not contain a backslash";
  const segments = name.split("/");
  if (segments.includes("..")) return "must not contain a .. segment";
  if (segments.includes(".")) return "must not contain a . segment";
  if (segments.includes("")) return "must not contain an empty segment (// or a trailing /)";
  return undefined;
}
