import { randomUUID } from "node:crypto";

/** Public identifiers: random v4 UUIDs, lower case (docs/behaviour.md §1). */
export const newId = (): string => randomUUID();

/** The public API's uuid shape as a regular expression: either letter case, version 4, RFC variant (also for /openapi.json). */
export const uuidPatternSource =
  "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$";
/** What Loom produces: the same, lower case. */
export const producedUuidPatternSource = "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$";

const uuidPattern = new RegExp(uuidPatternSource);

/** The public API's uuid shape: either letter case, version 4, RFC variant. */
export function isUuid(value: string): boolean {
  return uuidPattern.test(value);
}
