import { z } from "zod";

/**
 * Response shapes of public-api.md, as zod schemas: documented in
 * /openapi.json and checked against real responses in the tests.
 */
export const timestamp = z.iso.datetime({ offset: false, precision: 3 });
export const uuidString = z.uuid();

export const paginationSchema = z.strictObject({
  page_number: z.number().int(),
  page_size: z.number().int(),
  total_count: z.number().int(),
  total_pages: z.number().int(),
  next_page: z.number().int().optional(),
  previous_page: z.number().int().optional(),
});

export const errorBodySchema = z.strictObject({
  type: z.string(),
  errors: z.array(z.strictObject({ message: z.string(), path: z.string().optional() })),
  request_id: z.string(),
});

export const userSchema = z.strictObject({
  user_id: uuidString,
  email: z.string(),
  name: z.string().optional(),
  organizations: z.array(uuidString),
  created_at: timestamp,
  updated_at: timestamp,
});

export const apiKeySchema = z.strictObject({
  api_key_id: uuidString,
  organization_id: uuidString,
  name: z.string(),
  active: z.boolean(),
  created_at: timestamp,
  created_by: z.string(),
  last_used: timestamp,
  updated_at: timestamp,
});

export const createdApiKeySchema = apiKeySchema.extend({ value: z.string() });

export const apiKeyListSchema = z.strictObject({ api_keys: z.array(apiKeySchema), pagination: paginationSchema });
