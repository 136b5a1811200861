import { fromJson, type JsonValue, toJson } from "@bufbuild/protobuf";
import { type Value, ValueSchema } from "@bufbuild/protobuf/wkt";

/** Any JSON as a google.protobuf.Value (event payloads, run outputs), and back. */
export function jsonToValue(json: unknown): Value {
  return fromJson(ValueSchema, (json ?? null) as JsonValue);
}

export function valueToJson(value: Value | undefined): JsonValue {
  return value ? toJson(ValueSchema, value) : null;
}
