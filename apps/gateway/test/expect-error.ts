import { expect } from "vitest";
import { errorBodySchema } from "../src/schemas.ts";

/**
 * Asserts the error shape of docs/behaviour.md §2 — status, type, request id
 * echoed, nothing internal leaked — and returns the body.
 */
export function expectError(res: { status: number; body: unknown; headers?: Headers }, status: number, type: string) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  if (res.headers) expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  const body = errorBodySchema.parse(res.body);
  expect(body.type).toBe(type);
  if (res.headers) expect(body.request_id).toBe(res.headers.get("x-request-id"));
  expect(JSON.stringify(body)).not.toMatch(/at .*\.ts:\d+|Mongo|stack/i);
  return body;
}
