import { isUuid } from "@loom/contracts/ids";
import { lengthProblem } from "@loom/contracts/text";

/** Most ids one array may hold (docs/api.md §8; why: docs/decisions.md). */
export const maxIdsPerArray = 100;

/** One problem with a request field, by its public path (`body.rule_ids[2]`). */
export type Violation = { path: string; message: string };

/** A text field's bound (1..max characters), when the field is present. */
export function checkText(
  violations: Violation[],
  path: string,
  value: string | undefined,
  max: number,
  problemOf = lengthProblem,
): void {
  const problem = value === undefined ? undefined : problemOf(value, 1, max);
  if (problem) violations.push({ path, message: problem });
}

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
