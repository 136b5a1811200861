/**
 * A deep copy of plain data — objects, arrays, Dates, bytes and primitives —
 * for the in-memory stores, which hand out copies as a database would. A
 * walk over the value costs a fraction of `structuredClone` (which serializes
 * and deserializes), and this sits on every read of the embedded default's
 * stores. Anything else (a Map, a class instance) falls back to structuredClone.
 */
export function plainCopy<T>(value: T): T {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return value.map(plainCopy) as T;
  if (value instanceof Date) return new Date(value.getTime()) as T;
  if (value instanceof Uint8Array) return new Uint8Array(value) as T;
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return structuredClone(value);
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) copy[key] = plainCopy((value as Record<string, unknown>)[key]);
  return copy as T;
}
