import type { JsonObject } from "@bufbuild/protobuf";
import { jsonSchema } from "ai";
import { z } from "zod";

/**
 * A caller's JSON schema for the AI SDK's structured output, as sent (the
 * provider gets it unchanged), checked on our side too: a reply that is not
 * valid JSON for it fails (the SDK's NoObjectGeneratedError, classified
 * ProviderInvalidResponse) rather than reaching a client that trusts it. A
 * schema zod cannot read is sent unchecked: the provider's own JSON-schema
 * mode still holds the reply to it. Chat's `output_schema` and a run's
 * JSON-schema rule both go through here.
 */
export function validatedSchema(schema: JsonObject) {
  let validator: z.ZodType | undefined;
  try {
    validator = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch {
    validator = undefined;
  }
  if (!validator) return jsonSchema(schema);
  const check = validator;
  return jsonSchema(schema, {
    validate: (value) => {
      const result = check.safeParse(value);
      return result.success ? { success: true, value } : { success: false, error: result.error };
    },
  });
}
