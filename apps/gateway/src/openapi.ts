import { z } from "zod";
import type { Operation } from "./operation.ts";
import { errorBodySchema } from "./schemas.ts";

type JsonSchemaObject = Record<string, unknown>;

/**
 * The error answers (docs/behaviour.md §2), always with the error body, each
 * with the rule that says which operations can give it: derived from what the
 * operation declares, so a new operation lists the right ones by itself.
 */
const errorResponses: Record<string, { description: string; gives(op: Operation): boolean }> = {
  "400": {
    description: "ValidationError: malformed JSON, wrong type or a bound violated; `errors` names each field",
    gives: (op) => hasInput(op),
  },
  "401": {
    description: "Unauthorized: missing, malformed, unknown, expired or revoked credential",
    gives: () => true,
  },
  "402": {
    description:
      "PaymentRequired: billing is required and the organization has no active subscription; the message carries the billing management URL",
    gives: (op) => op.paid === true,
  },
  "403": {
    description: "Forbidden: the operation is not allowed for this principal",
    gives: () => true,
  },
  "404": {
    description: "NotFound: unknown id, or another organization's resource",
    gives: (op) => namesIds(op),
  },
  "409": {
    description:
      "Conflict: the current state refuses the request, e.g. an Idempotency-Key reused with another body, an API key past the user's or the organization's cap, or a tool's OpenAPI asked before it has a server",
    // Reads too: what is read may not be ready (a tool without a server has no OpenAPI).
    gives: () => true,
  },
  "413": {
    description: "PayloadTooLarge: the body is over this operation's limit",
    gives: (op) => op.body !== undefined,
  },
  "429": {
    description:
      "RateLimited: over the credential's or the organization's rate limit or open-stream cap, an API key cap, or a queue is full; `Retry-After` says when to try again",
    gives: () => true,
  },
  "500": { description: "ServiceError", gives: () => true },
  "503": { description: "Unavailable: a dependency is down; see Retry-After", gives: () => true },
};

function hasInput(op: Operation): boolean {
  return op.params !== undefined || op.query !== undefined || op.body !== undefined;
}

/** An id in the path, or an `…_id` / `…_ids` field in the query or body: an id the organization may not have. */
function namesIds(op: Operation): boolean {
  if (/\{\w+\}/.test(op.path)) return true;
  const inputs = [op.query, op.body?.documented ?? op.body?.schema].filter((s) => s !== undefined);
  return inputs.some((s) => /"\w+_ids?":/.test(JSON.stringify(jsonSchema(s, "input"))));
}

/**
 * The tag (Swagger UI's group) of each resource, by the literal segments of
 * its path: the last segment (or parent/segment pair) named here decides, so
 * `/assistant-runs/{id}/cancel` is an assistant run's and
 * `/assistant-runs/{id}/events` an event's. Listed in the page's order.
 */
const resourceTags: [segment: string, tag: string][] = [
  ["api-keys", "API keys"],
  ["users", "Users"],
  ["billing", "Billing"],
  ["assistants", "Assistants"],
  ["assistants/runs", "Assistant runs"],
  ["assistant-runs", "Assistant runs"],
  ["events", "Events"],
  ["structure-runs/spans", "Structure runs"],
  ["chat/messages", "Chat"],
  ["threads", "Threads"],
  ["messages", "Messages"],
  ["buckets", "Buckets"],
  ["assets", "Assets"],
  ["asset-urls", "Assets"],
  ["rulesets", "Rulesets"],
  ["rules", "Rules"],
  ["tools", "Tools"],
  ["tools/runs", "Tool runs"],
  ["tool-runs", "Tool runs"],
  ["secrets", "Secrets"],
  ["knowledge-bases", "Knowledge bases"],
  ["knowledge-bases/knowledge-base-jobs", "Knowledge base jobs"],
  ["knowledge-base-jobs", "Knowledge base jobs"],
  ["knowledge-bases/query", "Knowledge base queries"],
  ["knowledge-bases/queries", "Knowledge base queries"],
  ["knowledge-bases/search", "Knowledge base queries"],
  ["knowledge-bases/searches", "Knowledge base queries"],
  ["knowledge-base-queries", "Knowledge base queries"],
  ["knowledge-base-searches", "Knowledge base queries"],
  ["data-connectors", "Data connectors"],
];
const tagOfSegment = new Map(resourceTags);

function resourceTag(path: string): string {
  const segments = path.split("/").filter((s) => s !== "" && !s.startsWith("{"));
  for (let i = segments.length - 1; i >= 0; i--) {
    const tag = tagOfSegment.get(`${segments[i - 1]}/${segments[i]}`) ?? tagOfSegment.get(segments[i]!);
    if (tag) return tag;
  }
  throw new Error(`no resource tag for ${path}: add its resource to resourceTags`);
}

/** The page's opening text (Swagger UI renders it as Markdown). */
const gettingStarted = `Every operation is also served under the /api prefix.

## Getting started

Every call carries an API key (\`loom_...\`) as a bearer token. On its first start Loom prints a bootstrap key to its log
(or stores \`BOOTSTRAP_API_KEY\` when set); mint more with \`pnpm loom keys create\`, or with **API keys** below.
Then, for example, list your assistants:

\`\`\`
curl -H "Authorization: Bearer $LOOM_API_KEY" http://localhost:8080/assistants
\`\`\`

Here, press **Authorize**, paste the key, and every operation's **Try it out** sends it.`;

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
      Object.entries(properties).map(([name, p]) => {
        if (required.has(name)) return [name, p];
        // The field's description stays on the field, not on one of its forms.
        const { description, ...form } = p;
        return [name, { ...(description === undefined ? {} : { description }), anyOf: [form, { type: "null" }] }];
      }),
    ),
  };
}

function parameters(op: Operation) {
  const of = (where: "path" | "query", schema: z.ZodType | undefined) => {
    if (!schema) return [];
    const json = jsonSchema(schema, "input") as {
      properties?: Record<string, { description?: string }>;
      required?: string[];
    };
    // Arrays are sent as repeated parameters (`status=A&status=B`), OpenAPI's default style.
    // The field's description is the parameter's too: Swagger UI shows a parameter's own. A path id says
    // whose it is by its name (`assistant_run_id`: "The assistant run's id").
    return Object.entries(json.properties ?? {}).map(([name, { description, ...schema }]) => ({
      name,
      in: where,
      ...(description !== undefined
        ? { description }
        : where === "path" && name.endsWith("_id")
          ? { description: `The ${name.slice(0, -"_id".length).replaceAll("_", " ")}'s id` }
          : {}),
      required: where === "path" || (json.required ?? []).includes(name),
      schema,
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
      ...(eventIds
        ? {
            id: {
              type: "string",
              pattern: "^[0-9]+$",
              description: "The event's offset: send it back as Last-Event-ID to resume after it",
            },
          }
        : {}),
      event: {
        type: "string",
        const: "message",
        description: "no `event:` field is sent, so parsers report the default",
      },
      data: {
        type: "string",
        description: "The event, as JSON",
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
      tags: [resourceTag(op.path)],
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
          Object.entries(errorResponses)
            .filter(([, error]) => error.gives(op))
            .map(([status, { description }]) => [
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
      description: gettingStarted,
    },
    tags: [...new Set(resourceTags.map(([, tag]) => tag))].map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer", description: "An API key (loom_...) or a JWT access token" },
      },
      schemas: { ErrorBody: jsonSchema(errorBodySchema, "output") },
    },
  };
}
