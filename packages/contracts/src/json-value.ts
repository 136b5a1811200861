import type { JsonValue } from "@bufbuild/protobuf";
import type { ListValue, Struct, Value } from "@bufbuild/protobuf/wkt";

/**
 * Any JSON as a google.protobuf.Value (event payloads, run outputs), and back.
 * Written out rather than through protobuf-es's `fromJson`/`toJson`, which
 * walk the Value's descriptor at every node: every event a stream sends is
 * converted both ways, and these cost a fraction of that. The messages are
 * the plain objects `create` makes; the results are those of `fromJson` and
 * `toJson` (packages/contracts/test/json-value.test.ts compares them).
 */
export function jsonToValue(json: unknown): Value {
  const value = json ?? null;
  switch (typeof value) {
    case "string":
      return { $typeName: "google.protobuf.Value", kind: { case: "stringValue", value } };
    case "number":
      return { $typeName: "google.protobuf.Value", kind: { case: "numberValue", value } };
    case "boolean":
      return { $typeName: "google.protobuf.Value", kind: { case: "boolValue", value } };
    case "object":
      if (value === null) return { $typeName: "google.protobuf.Value", kind: { case: "nullValue", value: 0 } };
      if (Array.isArray(value)) {
        const list: ListValue = { $typeName: "google.protobuf.ListValue", values: value.map(jsonToValue) };
        return { $typeName: "google.protobuf.Value", kind: { case: "listValue", value: list } };
      }
      return { $typeName: "google.protobuf.Value", kind: { case: "structValue", value: structOf(value) } };
    default:
      throw new Error(`cannot decode google.protobuf.Value from JSON: ${typeof value}`);
  }
}

function structOf(object: object): Struct {
  const fields: Record<string, Value> = {};
  for (const [key, item] of Object.entries(object)) setOwn(fields, key, jsonToValue(item));
  return { $typeName: "google.protobuf.Struct", fields };
}

/** Sets a property as data: a key named __proto__ too, as in JSON.parse's own objects, never the prototype. */
function setOwn<T>(object: Record<string, T>, key: string, value: T): void {
  if (key === "__proto__")
    Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  else object[key] = value;
}

export function valueToJson(value: Value | undefined): JsonValue {
  if (!value) return null;
  const kind = value.kind;
  switch (kind.case) {
    case "nullValue":
      return null;
    case "numberValue":
      if (!Number.isFinite(kind.value)) throw new Error("google.protobuf.Value cannot be NaN or Infinity");
      return kind.value;
    case "stringValue":
    case "boolValue":
      return kind.value;
    case "listValue":
      return kind.value.values.map((item) => valueToJson(item));
    case "structValue": {
      const object: Record<string, JsonValue> = {};
      for (const [key, item] of Object.entries(kind.value.fields)) setOwn(object, key, valueToJson(item));
      return object;
    }
    default:
      throw new Error("google.protobuf.Value must have a value");
  }
}
