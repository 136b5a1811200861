import type { JsonValue } from "@bufbuild/protobuf";
import { invalidArgument } from "@loom/contracts/errors";
import { isUuid, uuidPatternSource } from "@loom/contracts/ids";
import { pageBounds } from "@loom/contracts/paging";
import { runStatuses } from "@loom/contracts/run-lifecycle";
import { lengthProblem, namePatternSource, nameProblem } from "@loom/contracts/text";
import { z } from "zod";

/**
 * Parses one part of a request (`path`, `query` or `body`) with a zod schema;
 * every problem becomes one `errors` item with its public path.
 */
export function parseInput<S extends z.ZodType>(
  part: "path" | "query" | "body",
  schema: S,
  value: unknown,
): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw invalidArgument(
    result.error.issues.map((issue) => ({ path: publicPath(part, issue.path), message: issue.message })),
  );
}

function publicPath(part: string, path: PropertyKey[]): string {
  return path.reduce<string>(
    (acc, key) => (typeof key === "number" ? `${acc}[${key}]` : `${acc}.${String(key)}`),
    part,
  );
}

/** Text bounded in characters (code points), per docs/behaviour.md §9; the checks are custom, so /openapi.json gets them as metadata. */
function boundedString(
  max: number,
  problemOf: (value: string, min: number, max: number) => string | undefined,
  meta: Record<string, unknown> = {},
) {
  return z
    .string()
    .check((ctx) => {
      const problem = problemOf(ctx.value, 1, max);
      if (problem) ctx.issues.push({ code: "custom", message: problem, input: ctx.value });
    })
    .meta({ minLength: 1, maxLength: max, ...meta });
}

/** A name: 1..max characters, no control characters. */
export const boundedName = (max: number) => boundedString(max, nameProblem, { pattern: namePatternSource });

/** Free text such as a description: 1..max characters. */
export const boundedText = (max: number) => boundedString(max, lengthProblem);

/**
 * How deeply free-form JSON (event payloads) may nest: objects and arrays
 * inside each other. Services carry such JSON as google.protobuf.Value, two
 * message levels per JSON level, and protobuf decoders stop at 100 (about 48
 * JSON levels); 32 leaves room for the messages around it. Documented in
 * docs/decisions.md.
 */
export const maxJsonDepth = 32;

/** Depth of nested objects/arrays, counting no further than `limit + 1` (so a hostile body costs little). */
function jsonDepth(value: unknown, limit: number): number {
  if (typeof value === "number") return Number.isFinite(value) ? 0 : notJson;
  if (value === null || typeof value !== "object") return 0;
  if (limit < 0) return 1;
  let deepest = 0;
  for (const item of Array.isArray(value) ? value : Object.values(value)) {
    deepest = Math.max(deepest, jsonDepth(item, limit - 1));
    if (deepest > limit) break;
  }
  return deepest + 1;
}

/** jsonDepth's answer for a number JSON cannot write (JSON.parse reads 1e400 as Infinity). */
const notJson = Number.POSITIVE_INFINITY;

/**
 * Any JSON value, nested at most `maxJsonDepth` levels; typed as JSON, which it is: request bodies are parsed JSON.
 * A number too large for JSON to write back (JSON.parse reads `1e400` as Infinity) is refused.
 */
export const jsonValue = z.custom<JsonValue>().check((ctx) => {
  const depth = jsonDepth(ctx.value, maxJsonDepth);
  if (depth > maxJsonDepth) {
    ctx.issues.push({
      code: "custom",
      message: depth === notJson ? "must be a JSON value" : `must be nested at most ${maxJsonDepth} levels deep`,
      input: ctx.value,
    });
  }
});

/** A JSON object whose values are any JSON, each nested at most `maxJsonDepth` levels. */
export const jsonObject = z.record(z.string(), jsonValue, { error: "must be a JSON object" });

/** A path or body identifier in the public API's uuid shape; normalized to lower case. */
export const uuid = z
  .string()
  .meta({ format: "uuid", pattern: uuidPatternSource })
  .refine(isUuid, { message: "must be a uuid" })
  .transform((v) => v.toLowerCase());

/** Most ids one array may hold (see docs/decisions.md); the assistants service checks it again. */
export const maxIdsPerArray = 100;

/** An array of uuids, as every `*_ids` field of the API. */
export const idArray = z.array(uuid).max(maxIdsPerArray, `must hold at most ${maxIdsPerArray} ids`);

/**
 * An integer query parameter, sent as a string; documented as the integer it
 * must be. A zero fraction is the same integer: the generated
 * griptape-cloud-client types `page` and `page_size` as floats, and Python
 * sends 2.0 as `2.0`.
 */
export function integerParam(min: number, max: number, fallback: number, description?: string) {
  return z
    .string()
    .regex(/^-?\d+(?:\.0+)?$/, "must be an integer")
    .transform(Number)
    .pipe(z.number().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`))
    .meta({ type: "integer", minimum: min, maximum: max, default: fallback, description })
    .optional()
    .transform((v) => v ?? fallback);
}

/** `page` and `page_size` of every page-numbered list (docs/behaviour.md §4). */
export const pageQuery = z.object({
  page: integerParam(1, Number.MAX_SAFE_INTEGER, pageBounds.defaultPage, "Which page to answer, from 1"),
  page_size: integerParam(1, pageBounds.maxPageSize, pageBounds.defaultPageSize, "How many items a page holds"),
});

/** A boolean query parameter, sent as `true` or `false`; documented as the boolean it must be. */
export function booleanParam(fallback: boolean, description?: string) {
  return z
    .enum(["true", "false"], { error: "must be true or false" })
    .transform((v) => v === "true")
    .meta({ type: "boolean", default: fallback, description })
    .optional()
    .transform((v) => v ?? fallback);
}

/**
 * `status=A,B` and `status=A&status=B` alike (docs/behaviour.md §4), each one of `statuses`; documented as the
 * repeated form. Given, it must name at least one status (`status=` alone is a mistake, not "every status").
 */
export function statusQueryOf<const S extends readonly [string, ...string[]]>(statuses: S) {
  return z
    .union([z.string(), z.array(z.string())])
    .meta({
      anyOf: undefined,
      type: "array",
      items: { type: "string", enum: [...statuses] },
      minItems: 1,
      description: "Only those in these statuses (`status=A&status=B` or `status=A,B`); absent: every status",
    })
    .optional()
    .transform((v) =>
      v === undefined
        ? undefined
        : [v]
            .flat()
            .flatMap((s) => s.split(","))
            .map((s) => s.trim())
            .filter(Boolean),
    )
    .pipe(
      z
        .array(z.enum(statuses, { message: `must be one of ${statuses.join(", ")}` }))
        .min(1, "must name at least one status")
        .optional()
        .transform((v) => v ?? []),
    );
}

/** A run's or a tool run's status (the same values). */
export const statusQuery = statusQueryOf(runStatuses);
