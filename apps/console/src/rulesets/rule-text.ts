import type { Rule } from "./api.ts";

/** The most characters a rule's name holds (the API's bound). */
const maxNameLength = 200;

/**
 * The name the console gives a rule it makes: the API asks for one, and the
 * rule's own words say what it is. Its text on one line (names hold no control
 * characters), cut to the API's bound.
 */
export function ruleNameOf(text: string): string {
  const line = text
    .replace(/\p{Cc}+/gu, " ")
    .replace(/\s+/g, " ")
    .trim();
  return [...line].slice(0, maxNameLength).join("") || "Rule";
}

/** A rule as a person reads and edits it: its words, or its JSON schema as indented JSON. */
export const textOf = (rule: Rule["rule"]): string => (typeof rule === "string" ? rule : JSON.stringify(rule, null, 2));

/**
 * The value to store for edited text: words stay words; a JSON schema rule
 * stays a JSON object, so its text must read as one.
 */
export function ruleValueOf(text: string, was: Rule["rule"]): Rule["rule"] {
  if (typeof was === "string") return text;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new Error("This rule is a JSON schema: its text must be a JSON object.");
  return value as Record<string, unknown>;
}
