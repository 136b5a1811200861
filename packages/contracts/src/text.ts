import type { Violation } from "./errors.ts";
/**
 * Length in characters (Unicode code points), as the public API counts name
 * bounds (docs/behaviour.md §9), not UTF-16 code units as String#length does.
 */
export function charLength(value: string): number {
  let count = 0;
  for (const _ of value) count++;
  return count;
}

/** The message every length bound in Loom uses, in the gateway and in services. */
export function lengthProblem(value: string, min: number, max: number): string | undefined {
  const length = charLength(value);
  return length < min || length > max ? `must be ${min} to ${max} characters long` : undefined;
}

/** C0 controls (NUL, tab, newline, ...), DEL and C1 controls, as a regular-expression class body. */
const controlCharacters = "\\u0000-\\u001f\\u007f-\\u009f";
const controlCharacter = new RegExp(`[${controlCharacters}]`);
/** A name as a JSON Schema pattern (for /openapi.json): no control character anywhere. */
export const namePatternSource = `^[^${controlCharacters}]*$`;

/**
 * The check every name in Loom passes (API keys, assistants, threads, event
 * types, buckets): its length bound, and no control characters — a name is
 * shown in lists and logs, where a NUL or an escape sequence does harm.
 */
export function nameProblem(value: string, min: number, max: number): string | undefined {
  return (
    lengthProblem(value, min, max) ?? (controlCharacter.test(value) ? "must not contain control characters" : undefined)
  );
}

/** A character of an asset name's segment: not `/`, not a backslash, not a control character. */
const segmentCharacter = `[^/\\\\${controlCharacters}]`;
/** The same, not `.` either. */
const segmentStart = `[^./\\\\${controlCharacters}]`;
/** A segment that is not empty, `.` or `..`: `.x…`, `..x…` or anything not starting with `.`. */
const assetSegment = `(?:${segmentStart}${segmentCharacter}*|\\.${segmentStart}${segmentCharacter}*|\\.\\.${segmentCharacter}+)`;

/**
 * The asset name rules of docs/behaviour.md §7 but the length (no `.`, `..` or
 * empty segment, backslash, control character or leading `/`) as a JSON
 * Schema pattern, for /openapi.json only: the services check names
 * (asset-names.ts), and a gateway test holds this pattern to that check.
 */
export const assetNamePatternSource = `^${assetSegment}(?:/${assetSegment})*$`;

/**
 * A header name Loom sends a tool's server: an RFC 9110 §5.6.2 token. The
 * tools service checks it; the gateway's /openapi.json says it.
 */
export const headerNamePatternSource = "^[!#$%&'*+\\-.^_`|~0-9A-Za-z]+$";

/** A header value that cannot end the header early or carry a NUL (RFC 9110 §5.5). */
export const headerValuePatternSource = "^[^\\r\\n\\u0000]*$";

/** A text field's bound (min..max characters) as a violation at `path`, when the field is present. */
export function checkText(
  violations: Violation[],
  path: string,
  value: string | undefined,
  max: number,
  problemOf = lengthProblem,
  min = 1,
): void {
  const problem = value === undefined ? undefined : problemOf(value, min, max);
  if (problem) violations.push({ path, message: problem });
}
