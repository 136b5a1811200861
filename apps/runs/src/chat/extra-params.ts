import type { JsonObject } from "@bufbuild/protobuf";
import { z } from "zod";
import type { CallSettings } from "./port.ts";

/**
 * The `extra_params` keys chat passes on (docs/decisions.md): the sampling
 * settings every AI SDK provider understands, under their OpenAI names.
 * Anything else would reach a provider unchecked (or be dropped silently), so
 * an unknown key is a 400 naming the allowed ones.
 */
const extraParamsSchema = z.strictObject({
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.number().int().min(1).optional(),
  seed: z.number().int().optional(),
  stop: z.union([z.string(), z.array(z.string()).max(4)]).optional(),
  presence_penalty: z.number().min(-2).max(2).optional(),
  frequency_penalty: z.number().min(-2).max(2).optional(),
});

export const allowedExtraParams = Object.keys(extraParamsSchema.shape);

export function callSettings(
  extra: JsonObject | undefined,
): { settings: CallSettings } | { problems: Array<{ path: string; message: string }> } {
  const parsed = extraParamsSchema.safeParse(extra ?? {});
  if (!parsed.success) {
    return {
      problems: parsed.error.issues.map((issue) => ({
        path: [
          "body.driver_configuration.extra_params",
          ...issue.path.map(String),
          ...(issue.code === "unrecognized_keys" ? [issue.keys[0] ?? ""] : []),
        ].join("."),
        message:
          issue.code === "unrecognized_keys"
            ? `not allowed; allowed keys: ${allowedExtraParams.join(", ")}`
            : issue.message,
      })),
    };
  }
  const p = parsed.data;
  const settings: CallSettings = {};
  if (p.top_p !== undefined) settings.topP = p.top_p;
  if (p.top_k !== undefined) settings.topK = p.top_k;
  if (p.seed !== undefined) settings.seed = p.seed;
  if (p.stop !== undefined) settings.stopSequences = typeof p.stop === "string" ? [p.stop] : p.stop;
  if (p.presence_penalty !== undefined) settings.presencePenalty = p.presence_penalty;
  if (p.frequency_penalty !== undefined) settings.frequencyPenalty = p.frequency_penalty;
  return { settings };
}
