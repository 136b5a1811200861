/**
 * Length in characters (Unicode code points), as the public API counts name
 * bounds (semantics.md §9), not UTF-16 code units as String#length does.
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
