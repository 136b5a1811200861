import { create, fromJson, type JsonValue, toBinary, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { jsonToValue, valueToJson } from "../src/json-value.ts";

const samples: JsonValue[] = [
  null,
  0,
  -1.5,
  1e300,
  "",
  "text with \u00e9 and \ud83d\ude00",
  true,
  false,
  [],
  {},
  [1, "two", null, false, [3], { four: 4 }],
  { status: "QUEUED", nested: { deep: [{ a: null }, { b: [true] }] }, "": "empty key", "a.b": 1 },
  JSON.parse('{"__proto__": {"polluted": true}, "constructor": 1}') as JsonValue,
];

describe("JSON as google.protobuf.Value, written out", () => {
  it("makes the messages protobuf-es's fromJson makes, byte for byte on the wire", () => {
    for (const json of samples) {
      const ours = jsonToValue(json);
      const theirs = fromJson(ValueSchema, json);
      expect(ours).toEqual(theirs);
      expect(toBinary(ValueSchema, ours)).toEqual(toBinary(ValueSchema, theirs));
    }
  });

  it("gives back the JSON protobuf-es's toJson gives, keys and order kept, __proto__ as data", () => {
    for (const json of samples) {
      const value = fromJson(ValueSchema, json);
      expect(valueToJson(value)).toEqual(toJson(ValueSchema, value));
      expect(JSON.stringify(valueToJson(jsonToValue(json)))).toBe(JSON.stringify(json));
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("refuses what JSON cannot hold, as protobuf-es does: no kind, NaN and Infinity", () => {
    expect(() => valueToJson(create(ValueSchema, {}))).toThrow(/must have a value/);
    expect(() => valueToJson(jsonToValue(Number.NaN))).toThrow(/NaN or Infinity/);
    expect(() => valueToJson(jsonToValue(Number.POSITIVE_INFINITY))).toThrow(/NaN or Infinity/);
    expect(() => jsonToValue(() => 1)).toThrow(/cannot decode/);
    expect(valueToJson(undefined)).toBeNull();
    expect(jsonToValue(undefined)).toEqual(fromJson(ValueSchema, null));
  });
});
