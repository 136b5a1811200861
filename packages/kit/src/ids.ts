import { randomUUID } from "node:crypto";

/** Public identifiers: random v4 UUIDs, lower case (semantics.md §1). */
export const newId = (): string => randomUUID();

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** The public API's uuid shape: either letter case, version 4, RFC variant. */
export function isUuid(value: string): boolean {
  return uuidPattern.test(value);
}
