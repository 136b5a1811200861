import { z } from "zod";
import type { Operation } from "./operation.ts";
import { errorBodySchema } from "./schemas.ts";

/** Every operation may answer these (docs/behaviour.md §2), always with the error body. */
const errorResponses = {
  "400": "ValidationError: malformed JSON, wrong type or a bound violated",
  "401": "Unauthorized: missing, malformed, unknown, expired or revoked credential",
  "402":
    "PaymentRequired: billing is required and the organization has no active subscription; the message carries the billing management URL",
  "403": "Forbidden: the operation is not allowed for this principal",
  "404": "NotFound: unknown id, or another organization's resource",
  "409":
    "Conflict: e.g. an Idempotency-Key reused with another body, or an API key past the user's or the organization's cap",
  "413": "PayloadTooLarge",
  "429":
    "RateLimited: over the credential's or the organization's rate limit or open-stream cap, an API key cap, or a queue is full; `Retry-After` says when to try again",
  "500": "ServiceError",
  "503": "Unavailable: a dependency is down; see Retry-After",
};

type JsonSchemaObject = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: "input" | "output"): JsonSchemaObject {
  // OpenAPI 3.1's schema dialect is the default; a `$schema` in every nested schema says nothing more.
  const { $schema: _, ...json } = z.toJSONSchema(schema, {
    io,
    unrepresentable: "any",
    target: "draft-2020-12",
    // Query integers and booleans are parsed from text; documented as what they must be, the text pattern and enum go.
    override: ({ jsonSchema }) => {
      if (jsonSchema.type === "integer") delete jsonSchema.pattern;
      if (jsonSchema.type === "boolean") delete jsonSchema.enum;
    },
  });
  return json as JsonSchemaObject;
}

/** The body reader drops top-level `null`s (docs/behaviour.md §1): every optional field of a body also takes null. */
function nullableOptionals(schema: JsonSchemaObject): JsonSchemaObject {
  const properties = schema.properties as Record<string, JsonSchemaObject> | undefined;
  if (schema.type !== "object" || !properties) return schema;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  return {
    ...schema,
    properties: Object.fromEntries(
      Object.entries(properties).map(([name, p]) => [name, required.has(name) ? p : { anyOf: [p, { type: "null" }] }]),
    ),
  };
}

function parameters(op: Operation) {
  const of = (where: "path" | "query", schema: z.ZodType | undefined) => {
    if (!schema) return [];
    const json = jsonSchema(schema, "input") as { properties?: Record<string, object>; required?: string[] };
    // Arrays are sent as repeated parameters (`status=A&status=B`), OpenAPI's default style.
    return Object.entries(json.properties ?? {}).map(([name, property]) => ({
      name,
      in: where,
      required: where === "path" || (json.required ?? []).includes(name),
      schema: property,
    }));
  };
  return [...of("path", op.params), ...of("query", op.query)];
}

/**
 * One event of a stream, as SSE parsers (and schema fuzzers) see it: `id` the
 * offset (resumable streams only), `data` the event's JSON. Keep-alives are
 * comments, not events.
 */
function serverSentEvent(data: z.ZodType | undefined, eventIds: boolean): JsonSchemaObject {
  return {
    type: "object",
    required: eventIds ? ["id", "data"] : ["data"],
    properties: {
      ...(eventIds ? { id: { type: "string", pattern: "^[0-9]+$" } } : {}),
      event: {
        type: "string",
        const: "message",
        description: "no `event:` field is sent, so parsers report the default",
      },
      data: {
        type: "string",
        contentMediaType: "application/json",
        ...(data ? { contentSchema: jsonSchema(data, "output") } : {}),
      },
    },
  };
}

function requestBodySchema(body: NonNullable<Operation["body"]>): JsonSchemaObject {
  const documented = body.documented ?? body.schema;
  // anyOf, not oneOf: a body may fit two forms (an object with `events` and `type`); the handler decides by `events`.
  const forms = documented instanceof z.ZodUnion ? documented.options.map((form) => form as z.ZodType) : [documented];
  const schemas = forms.map((form) => nullableOptionals(jsonSchema(form, "input")));
  // A whole body of `null` is an absent body: fine where the body is optional.
  if (!body.required) schemas.push({ type: "null" });
  return schemas.length === 1 ? schemas[0]! : { anyOf: schemas };
}

/** The OpenAPI 3.1 document of exactly the operations that are mounted. */
export function openApiDocument(operations: Operation[]) {
  const paths: Record<string, Record<string, object>> = {};
  for (const op of operations) {
    const success = op.response.stream
      ? {
          description: op.response.description,
          content: {
            "text/event-stream": { schema: serverSentEvent(op.response.schema, op.response.eventIds === true) },
          },
        }
      : op.response.schema
        ? {
            description: op.response.description,
            content: { "application/json": { schema: jsonSchema(op.response.schema, "output") } },
          }
        : { description: op.response.description };
    (paths[op.path] ??= {})[op.method.toLowerCase()] = {
      operationId: op.id,
      summary: op.summary,
      security: [{ bearer: [] }],
      parameters: parameters(op),
      ...(op.body
        ? {
            requestBody: {
              required: op.body.required,
              content: { "application/json": { schema: requestBodySchema(op.body) } },
            },
          }
        : {}),
      responses: {
        [String(op.response.status)]: success,
        ...Object.fromEntries(
          Object.entries(errorResponses).map(([status, description]) => [
            status,
            { description, content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorBody" } } } },
          ]),
        ),
      },
    };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Loom",
      version: "2023-09-19",
      description: "Every operation is also served under the /api prefix.",
    },
    paths,
    components: {
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer", description: "An API key (loom_...) or a JWT access token" },
      },
      schemas: { ErrorBody: jsonSchema(errorBodySchema, "output") },
    },
  };
}
