import type { Activity } from "@loom/proto/tools/v1/activities_pb";

type Schema = Record<string, unknown>;

/** The types griptape maps to Python types; any other it reads as a string. */
const griptapeTypes = new Set(["string", "integer", "number", "boolean", "object", "array"]);

/**
 * A tool's activities as the OpenAPI document griptape's GriptapeCloudToolTool builds its activities from
 * (docs/behaviour.md, Tool runs): `info.title` the tool's name, one `/activities/<name>` POST operation per activity
 * with its `operationId`, `description` and JSON request body schema, in the forms griptape can read.
 */
export function toolOpenApiDocument(toolName: string, activities: Activity[]) {
  return {
    openapi: "3.0.3",
    info: { title: toolName, version: "1.0.0" },
    paths: Object.fromEntries(
      activities.map((activity) => [
        `/activities/${activity.name}`,
        {
          post: {
            operationId: activity.name,
            description: withoutJinja(activity.description),
            requestBody: {
              required: true,
              content: { "application/json": { schema: griptapeSchema(parsed(activity.inputSchemaJson)) } },
            },
            responses: {
              "200": { description: "The result as a griptape artifact (an ErrorArtifact when it failed)" },
            },
          },
        },
      ]),
    ),
  };
}

/**
 * griptape renders an activity's description as a Jinja template: `{{ x }}` would be rendered away and a lone `{%`
 * would raise. Doubled braces become single ones, `{%`/`%}` and `{#`/`#}` lose their brace; the words stay.
 */
export const withoutJinja = (text: string) => text.replace(/\{(?=[{%#])/g, "").replace(/(?<=[}%#])\}/g, "");

/**
 * An input schema as griptape reads it: only the top-level properties, each with a `type` that is one string
 * (griptape raises on a 3.1 `type` list, and reads `anyOf` as a string): a list becomes its first type but `null`,
 * `anyOf`/`oneOf` their first option's. Descriptions, enums and array items are kept; the rest griptape ignores.
 */
export function griptapeSchema(schema: Schema): Schema {
  const properties = isSchema(schema.properties) ? schema.properties : {};
  const names = Object.keys(properties);
  const required = Array.isArray(schema.required)
    ? schema.required.filter((name): name is string => typeof name === "string" && names.includes(name))
    : [];
  return {
    type: "object",
    properties: Object.fromEntries(
      Object.entries(properties).map(([name, property]) => [
        name,
        griptapeProperty(isSchema(property) ? property : {}),
      ]),
    ),
    ...(required.length > 0 ? { required } : {}),
  };
}

function griptapeProperty(property: Schema): Schema {
  const type = typeOf(property);
  const enumValues = Array.isArray(property.enum) ? property.enum.filter((v) => v !== null) : undefined;
  const items = type === "array" && isSchema(property.items) ? griptapeProperty(property.items) : undefined;
  return {
    type,
    ...(typeof property.description === "string" ? { description: withoutJinja(property.description) } : {}),
    ...(enumValues && enumValues.length > 0 ? { enum: enumValues } : {}),
    ...(items ? { items } : {}),
  };
}

function typeOf(property: Schema): string {
  const { type } = property;
  if (typeof type === "string" && griptapeTypes.has(type)) return type;
  if (Array.isArray(type)) {
    const first = type.find((t) => typeof t === "string" && griptapeTypes.has(t));
    if (typeof first === "string") return first;
  }
  for (const options of [property.anyOf, property.oneOf, property.allOf]) {
    if (!Array.isArray(options)) continue;
    const option = options.find((o) => isSchema(o) && o.type !== "null");
    if (isSchema(option)) return typeOf(option);
  }
  if (Array.isArray(property.enum) && property.enum.length > 0) {
    const first = property.enum.find((v) => v !== null);
    if (typeof first === "number") return Number.isInteger(first) ? "integer" : "number";
    if (typeof first === "boolean") return "boolean";
  }
  if (isSchema(property.properties)) return "object";
  return "string";
}

function parsed(json: string): Schema {
  try {
    const value: unknown = JSON.parse(json);
    return isSchema(value) ? value : {};
  } catch {
    return {};
  }
}

const isSchema = (value: unknown): value is Schema =>
  typeof value === "object" && value !== null && !Array.isArray(value);
