import type { Violation } from "@loom/contracts/errors";
import { isUuid } from "@loom/contracts/ids";

/** Most ids one array may hold (docs/api.md §8; why: docs/decisions.md). */
export const maxIdsPerArray = 100;

/** An id array's shape (at most maxIdsPerArray uuids), when present; the ids in lower case. */
export function checkIds(violations: Violation[], path: string, ids: string[] | undefined): string[] | undefined {
  if (ids === undefined) return undefined;
  if (ids.length > maxIdsPerArray) violations.push({ path, message: `must hold at most ${maxIdsPerArray} ids` });
  ids.forEach((id, i) => isUuid(id) || violations.push({ path: `${path}[${i}]`, message: "must be a uuid" }));
  return ids.map((id) => id.toLowerCase());
}

/**
 * Each well-formed id of `ids` (lower case, as `checkIds` returns them) that
 * is not in `known`: the organization has no such `what` (docs/behaviour.md §5).
 */
export function checkKnown(
  violations: Violation[],
  path: string,
  ids: string[],
  known: ReadonlySet<string>,
  what: string,
): void {
  ids.forEach((id, i) => {
    if (isUuid(id) && !known.has(id)) violations.push({ path: `${path}[${i}]`, message: `no ${what} ${id} exists` });
  });
}
