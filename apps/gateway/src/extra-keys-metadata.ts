import type { JsonObject } from "@bufbuild/protobuf";
import { z } from "zod";
import { jsonObject, jsonValue } from "./validation.ts";

/**
 * A body object whose unknown keys are kept as metadata (docs/decisions.md,
 * "Threads over HTTP"). griptape's conversation-memory
 * driver writes a memory's `meta` as top-level keys of its `PATCH
 * /threads/{id}` body, and a run's `meta` as keys of each message beside
 * `input` and `output`; its `load` reads them back from `metadata`. So the
 * unknown keys are merged, shallowly, over the explicit `metadata` entries.
 * The known keys keep their own validation; each unknown value is any JSON.
 *
 * `metadata` in the output is undefined when neither the explicit key nor any
 * unknown key was sent, so that an update leaves the stored metadata as it is.
 */
export function withExtraKeysAsMetadata<Shape extends z.ZodRawShape>(shape: Shape, description: string) {
  const known = new Set([...Object.keys(shape), "metadata"]);
  return z
    .object({
      ...shape,
      metadata: jsonObject.optional().meta({
        description: "Any JSON object to keep with it (replaces what is stored); other keys are merged into it",
      }),
    })
    .catchall(jsonValue)
    .meta({ description })
    .transform((body) => {
      const fields: Record<string, unknown> = {};
      const extra: JsonObject = {};
      for (const [key, value] of Object.entries(body)) {
        if (known.has(key)) fields[key] = value;
        else extra[key] = value as JsonObject[string];
      }
      const explicit = body.metadata as JsonObject | undefined;
      const metadata =
        explicit === undefined && Object.keys(extra).length === 0 ? undefined : { ...explicit, ...extra };
      return { ...fields, metadata } as z.output<z.ZodObject<Shape>> & { metadata?: JsonObject };
    });
}
