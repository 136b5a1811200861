import { Code, ConnectError } from "@connectrpc/connect";
import { invalidArgument } from "@loom/contracts/errors";
import type { Context } from "koa";
import getRawBody from "raw-body";

/** Request body limits of docs/behaviour.md §9. */
export const bodyLimits = {
  default: 1024 * 1024,
  events: 5 * 1024 * 1024,
  /** A thread's whole conversation (griptape's memory driver sends every run it keeps, up to 1,000 messages). */
  threads: 8 * 1024 * 1024,
} as const;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** A `\uD800`–`\uDFFF` escape: only such an escape can put a lone surrogate into parsed JSON (UTF-8 cannot encode one). */
const surrogateEscape = /\\u[dD][89a-fA-F]/;

/**
 * The path of the first string (value or key) in parsed JSON that holds a
 * lone UTF-16 surrogate, if any: such a string is not Unicode text, and
 * writing it as UTF-8 (to a store, to protobuf) silently makes it U+FFFD.
 */
function loneSurrogateAt(value: unknown, path: string): string | undefined {
  if (typeof value === "string") return value.isWellFormed() ? undefined : path;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = loneSurrogateAt(value[i], `${path}[${i}]`);
      if (found) return found;
    }
    return undefined;
  }
  if (typeof value === "object" && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (!key.isWellFormed()) return path;
      const found = loneSurrogateAt(item, `${path}.${key}`);
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * Reads a whole body as bytes: over the limit is 413, a body that cannot be
 * read is 400.
 */
export async function readRawBody(ctx: Context, limit: number = bodyLimits.default): Promise<Buffer> {
  try {
    return await getRawBody(ctx.req, { limit, length: ctx.get("Content-Length") || undefined });
  } catch (error) {
    // The rest of the body is still on the connection, unread: close it after
    // answering, or the next request on it would be read from the middle of this one.
    ctx.set("Connection", "close");
    if ((error as { type?: string }).type === "entity.too.large") {
      throw new ConnectError(`request body is larger than ${limit} bytes`, Code.OutOfRange);
    }
    throw invalidArgument([{ path: "body", message: "could not read the request body" }]);
  }
}

/**
 * Reads and parses a JSON body, whatever its Content-Type says (see
 * docs/decisions.md, "HTTP surface"). An empty body (no bytes) is
 * `undefined`; whitespace alone is not JSON, so it is malformed; over the
 * limit is 413; bytes that are not UTF-8, a `\u` escape of a lone UTF-16
 * surrogate (not Unicode text either) and malformed JSON are 400. `null`
 * fields at the top level mean "absent" (docs/behaviour.md §1), so they are
 * dropped here once for every route.
 */
export async function readJsonBody(ctx: Context, limit: number = bodyLimits.default): Promise<unknown> {
  const bytes = await readRawBody(ctx, limit);
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw invalidArgument([{ path: "body", message: "must be UTF-8 text" }]);
  }
  if (text === "") return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalidArgument([{ path: "body", message: "malformed JSON" }]);
  }
  // The walk only for the rare body that has such an escape at all.
  const lone = surrogateEscape.test(text) ? loneSurrogateAt(parsed, "body") : undefined;
  if (lone) throw invalidArgument([{ path: lone, message: "must be Unicode text: holds a lone UTF-16 surrogate" }]);
  if (parsed === null) return undefined;
  if (typeof parsed === "object" && !Array.isArray(parsed)) {
    return Object.fromEntries(Object.entries(parsed).filter(([, value]) => value !== null));
  }
  return parsed;
}
