import { describe, expect, it } from "vitest";
import { griptapeSchema, withoutJinja } from "../src/tool-openapi.ts";

describe("the /openapi document's input schemas, as griptape reads them", () => {
  it("gives every property one string type", () => {
    expect(
      griptapeSchema({
        type: "object",
        properties: {
          list: { type: ["integer", "null"] },
          onlyNull: { type: ["null"] },
          optional: { anyOf: [{ type: "null" }, { type: "number" }], description: "d" },
          one: { oneOf: [{ type: "boolean" }] },
          choice: { enum: [null, 3] },
          nested: { properties: { a: { type: "string" } } },
          untyped: {},
          array: { type: "array", items: { type: ["string", "null"], enum: ["a", null] } },
        },
        required: ["list", "missing", 7],
      }),
    ).toEqual({
      type: "object",
      properties: {
        list: { type: "integer" },
        onlyNull: { type: "string" },
        optional: { type: "number", description: "d" },
        one: { type: "boolean" },
        choice: { type: "integer", enum: [3] },
        nested: { type: "object" },
        untyped: { type: "string" },
        array: { type: "array", items: { type: "string", enum: ["a"] } },
      },
      required: ["list"],
    });
  });

  it("takes a schema without properties as an empty object", () => {
    expect(griptapeSchema({})).toEqual({ type: "object", properties: {} });
  });

  it("leaves no Jinja markup in a description", () => {
    expect(withoutJinja("use {{ x }} and {% if y %}z{% endif %} {# c #} {{{ w }}}")).toBe(
      "use { x } and % if y %z% endif % # c # { w }",
    );
  });
});
