import { z } from "zod";
import type { Operation } from "./operation.ts";
import { errorBodySchema } from "./schemas.ts";

const errorResponses = {
  "400": "ValidationError: malformed JSON, wrong type or a bound violated",
  "401": "Unauthorized: missing, malformed, unknown, expired or revoked credential",
  "403": "Forbidden",
  "404": "NotFound: unknown id, or another organization's resource",
  "413": "PayloadTooLarge",
  "429": "RateLimited: over the credential's rate limit or open-stream cap, or a queue is full; `Retry-After` says when to try again",
  "500": "ServiceError",
  "503": "Unavailable: a dependency is down",
};

const jsonSchema = (schema: z.ZodType, io: "input" | "output") =>
  z.toJSONSchema(schema, { io, unrepresentable: "any", target: "draft-2020-12" });

function parameters(op: Operation) {
  const of = (where: "path" | "query", schema: z.ZodType | undefined) => {
    if (!schema) return [];
    const json = jsonSchema(schema, "input") as { properties?: Record<string, object>; required?: string[] };
    return Object.entries(json.properties ?? {}).map(([name, property]) => ({
      name,
      in: where,
      required: where === "path" || (json.required ?? []).includes(name),
      schema: property,
    }));
  };
  return [...of("path", op.params), ...of("query", op.query)];
}

/** The OpenAPI 3.1 document of exactly the operations that are mounted. */
export function openApiDocument(operations: Operation[]) {
  const paths: Record<string, Record<string, object>> = {};
  for (const op of operations) {
    const success = op.response.stream
      ? { description: op.response.description, content: { "text/event-stream": { schema: { type: "string" } } } }
      : op.response.schema
        ? { description: op.response.description, content: { "application/json": { schema: jsonSchema(op.response.schema, "output") } } }
        : { description: op.response.description };
    (paths[op.path] ??= {})[op.method.toLowerCase()] = {
      operationId: op.id,
      summary: op.summary,
      security: [{ bearer: [] }],
      parameters: parameters(op),
      ...(op.body
        ? { requestBody: { required: op.body.required, content: { "application/json": { schema: jsonSchema(op.body.schema, "input") } } } }
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
      securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "An API key (loom_...) or a JWT access token" } },
      schemas: { ErrorBody: jsonSchema(errorBodySchema, "output") },
    },
  };
}
