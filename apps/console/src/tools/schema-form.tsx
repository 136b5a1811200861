import type { InputSchema } from "./api.ts";

/** What a field holds as typed: a checkbox's state, or the text of any other field. */
export type FieldValues = Record<string, string | boolean>;

type Kind = "string" | "number" | "boolean" | "json";

/** The field a property gets: simple types their own input, anything else (objects, arrays) JSON in a text area. */
const kindOf = (type: string | undefined): Kind =>
  type === "string"
    ? "string"
    : type === "number" || type === "integer"
      ? "number"
      : type === "boolean"
        ? "boolean"
        : "json";

/**
 * The input object from the fields: numbers and JSON parsed, an optional field
 * left empty (or an optional checkbox left clear) not sent. Throws, naming the
 * field, on JSON that does not parse.
 */
export function inputOf(schema: InputSchema, values: FieldValues): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  const required = new Set(schema.required ?? []);
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    const value = values[name];
    if (!required.has(name) && (value === undefined || value === "" || value === false)) continue;
    const kind = kindOf(property.type);
    if (kind === "boolean") input[name] = value === true;
    else if (kind === "number") input[name] = Number(value);
    else if (kind === "string") input[name] = value ?? "";
    else
      try {
        input[name] = JSON.parse(String(value));
      } catch {
        throw new Error(`${name}: not valid JSON.`);
      }
  }
  return input;
}

/** One labelled field per property of an activity's input schema, its description under it. */
export function SchemaFields({
  schema,
  idPrefix,
  values,
  onChange,
}: {
  schema: InputSchema;
  idPrefix: string;
  values: FieldValues;
  onChange: (values: FieldValues) => void;
}) {
  const required = new Set(schema.required ?? []);
  return (
    <>
      {Object.entries(schema.properties ?? {}).map(([name, property]) => {
        const id = `${idPrefix}-${name}`;
        const kind = kindOf(property.type);
        const set = (value: string | boolean) => onChange({ ...values, [name]: value });
        const common = {
          id,
          required: required.has(name) && kind !== "boolean",
          "aria-describedby": property.description ? `${id}-about` : undefined,
        };
        return (
          <div key={name} class="field">
            <label for={id}>{kind === "json" ? `${name} (JSON)` : name}</label>
            {kind === "boolean" ? (
              <input
                {...common}
                type="checkbox"
                checked={values[name] === true}
                onChange={(e) => set(e.currentTarget.checked)}
              />
            ) : kind === "json" ? (
              <textarea {...common} value={String(values[name] ?? "")} onInput={(e) => set(e.currentTarget.value)} />
            ) : kind === "number" ? (
              <input
                {...common}
                type="number"
                step="any"
                value={String(values[name] ?? "")}
                onInput={(e) => set(e.currentTarget.value)}
              />
            ) : (
              <input
                {...common}
                type="text"
                value={String(values[name] ?? "")}
                onInput={(e) => set(e.currentTarget.value)}
              />
            )}
            {property.description && (
              <span id={`${id}-about`} class="description">
                {property.description}
              </span>
            )}
          </div>
        );
      })}
    </>
  );
}
