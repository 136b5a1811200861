import getRawBody from "raw-body";
import { Code, ConnectError } from "@connectrpc/connect";
import { invalidArgument } from "@loom/kit/errors";
import type { Context } from "koa";

/** Request body limits of semantics.md §9. */
export const bodyLimits = { default: 1024 * 1024, events: 5 * 1024 * 1024 } as const;

/**
 * Reads and parses a JSON body. An empty body is `undefined`; over the limit is
 * 413; malformed JSON is 400. `null` fields at the top level mean "absent"
 * (semantics.md §1), so they are dropped here once for every route.
 */
export async function readJsonBody(ctx: Context, limit: number = bodyLimits.default): Promise<unknown> {
  let text: string;
  try {
    text = await getRawBody(ctx.req, { limit, encoding: "utf8", length: ctx.get("Content-Length") || undefined });
  } catch (error) {
    if ((error as { type?: string }).type === "entity.too.large") {
      throw new ConnectError(`request body is larger than ${limit} bytes`, Code.OutOfRange);
    }
    throw invalidArgument([{ path: "body", message: "could not read the request body" }]);
  }
  if (text.trim() === "") return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalidArgument([{ path: "body", message: "malformed JSON" }]);
  }
  if (parsed === null) return undefined;
  if (typeof parsed === "object" && !Array.isArray(parsed)) {
    return Object.fromEntries(Object.entries(parsed).filter(([, value]) => value !== null));
  }
  return parsed;
}
