import type { JsonObject, JsonValue } from "@bufbuild/protobuf";

/**
 * A run's rulesets as the model receives them (docs/behaviour.md §5): one
 * system instruction in griptape's own ruleset layout (its
 * `templates/rulesets/rulesets.j2`, rendered with `trim_blocks`,
 * `lstrip_blocks` and trailing whitespace stripped), so that an assistant run
 * and a griptape Agent given the same rulesets prompt the model alike.
 */

/** One ruleset of a run: its name, and its rules in its `rule_ids` order. */
export interface RulesetRules {
  name: string;
  /** A string rule, or a JSON object: a JSON schema the answer must follow (griptape's JsonSchemaRule). */
  rules: Array<string | JsonObject>;
}

/** What a run keeps of its rulesets, read once at its creation. */
export interface RunRules {
  /** The system instruction; absent when the run has no rulesets. */
  instructions?: string;
  /** The JSON schema that constrains the answer: the first JSON-schema rule, in instruction order. */
  outputSchema?: JsonObject;
}

const heading = "When responding, always use rules from the following rulesets.";

/** The instruction and the output schema of the rulesets, in the order given. */
export function runRules(rulesets: RulesetRules[]): RunRules {
  if (rulesets.length === 0) return {};
  const sections = rulesets.map(({ name, rules }) =>
    [
      `Ruleset name: ${name}`,
      `"${name}" rules:`,
      ...rules.flatMap((rule, i) => [`Rule #${i + 1}`, ruleText(rule)]),
    ].join("\n"),
  );
  const instructions = [heading, ...sections].join("\n\n").trimEnd();
  const outputSchema = rulesets.flatMap(({ rules }) => rules).find((rule) => typeof rule !== "string");
  return outputSchema === undefined ? { instructions } : { instructions, outputSchema };
}

/** A rule as text; a JSON-schema rule as griptape's `templates/rules/json_schema.j2` renders it. */
function ruleText(rule: string | JsonObject): string {
  if (typeof rule === "string") return rule;
  return `Output valid JSON that matches this schema: ${pythonJson(rule)}\nNo markdown, code snippets, code blocks, or backticks.`;
}

/**
 * JSON as Python's `json.dumps` writes it with its defaults, which griptape
 * uses for the schema: `", "` and `": "` separators, every character outside
 * printable ASCII escaped (`ensure_ascii`). Numbers are as JavaScript writes
 * them (a JSON value carries no int/float distinction).
 */
export function pythonJson(value: JsonValue): string {
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(", ")}]`;
  if (value !== null && typeof value === "object")
    return `{${Object.entries(value)
      .map(([key, item]) => `${asciiString(key)}: ${pythonJson(item)}`)
      .join(", ")}}`;
  return typeof value === "string" ? asciiString(value) : JSON.stringify(value);
}

/** A JSON string literal with every UTF-16 unit outside printable ASCII as `\uXXXX`, as Python's `ensure_ascii`. */
const asciiString = (text: string) =>
  JSON.stringify(text).replace(/[^\x20-\x7e]/g, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, "0")}`);
