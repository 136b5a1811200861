import { describe, expect, it } from "vitest";
import { pythonJson, runRules } from "../src/rules/instructions.ts";

const schema = {
  type: "object",
  properties: { café: { type: "string" }, n: { type: "integer", enum: [1, 2] } },
  required: ["café"],
};

describe("a run's rules as the model's system instruction", () => {
  it("renders the rulesets exactly as griptape 1.13's rulesets.j2 does", () => {
    // The expected text is griptape's own rendering of the same rulesets
    // (J2("rulesets/rulesets.j2").render(...) with Rule and JsonSchemaRule).
    const { instructions } = runRules([
      { name: "Tone", rules: ["Be brief.", "Answer in French."] },
      { name: "Empty", rules: [] },
      { name: "Format", rules: [schema, "Never apologise.  "] },
    ]);
    expect(instructions).toBe(
      [
        "When responding, always use rules from the following rulesets.",
        "",
        "Ruleset name: Tone",
        '"Tone" rules:',
        "Rule #1",
        "Be brief.",
        "Rule #2",
        "Answer in French.",
        "",
        "Ruleset name: Empty",
        '"Empty" rules:',
        "",
        "Ruleset name: Format",
        '"Format" rules:',
        "Rule #1",
        'Output valid JSON that matches this schema: {"type": "object", "properties": {"caf\\u00e9": {"type": "string"}, "n": {"type": "integer", "enum": [1, 2]}}, "required": ["caf\\u00e9"]}',
        "No markdown, code snippets, code blocks, or backticks.",
        "Rule #2",
        "Never apologise.",
      ].join("\n"),
    );
  });

  it("gives no instruction and no schema for a run without rulesets", () => {
    expect(runRules([])).toEqual({});
  });

  it("takes the first JSON-schema rule, in instruction order, as the answer's format", () => {
    const other = { type: "array" };
    expect(runRules([{ name: "A", rules: ["plain"] }]).outputSchema).toBeUndefined();
    expect(
      runRules([
        { name: "A", rules: ["plain", schema] },
        { name: "B", rules: [other] },
      ]).outputSchema,
    ).toEqual(schema);
  });

  it("writes JSON as Python's json.dumps does", () => {
    expect(pythonJson({ a: [1, 2.5, true, null], b: {}, c: [], "é\n": "😀\u007f" })).toBe(
      '{"a": [1, 2.5, true, null], "b": {}, "c": [], "\\u00e9\\n": "\\ud83d\\ude00\\u007f"}',
    );
  });
});
