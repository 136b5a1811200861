import type { Readable } from "node:stream";
import { timeLimit } from "@loom/runtime/time-limit";
import { type Dispatcher, request as undiciRequest } from "undici";
import { type CheckedUrl, checkUrl, type Resolve, systemResolve } from "./check.ts";
import { type PinnedConnections, singleUse } from "./connections.ts";
import { OutboundLimitExceeded } from "./errors.ts";
import type { OutboundPolicy } from "./policy.ts";

export interface OutboundFetchOptions {
  policy: OutboundPolicy;
  /** The most bytes of a response body read; past it the body's stream fails with `OutboundLimitExceeded`. */
  maxResponseBytes: number;
  /** The most milliseconds a call takes, from the check to the body's last byte. */
  timeoutMs: number;
  resolve?: Resolve;
  /** Keep-alive connections to checked addresses, shared by the calls; without it, one connection per request. */
  connections?: PinnedConnections;
}

/** A `fetch` for URLs users give: the MCP SDK's transports and a griptape tool server client take it as is. */
export type OutboundFetch = (input: string | URL, init?: RequestInit) => Promise<Response>;

/** Statuses whose response has no body: `new Response` refuses one. */
const bodiless = new Set([101, 103, 204, 205, 304]);

/**
 * A fetch that checks the URL, then connects only to the address it checked: undici's connection lookup is pinned to
 * that address, so a name that resolves elsewhere a moment later (DNS rebinding) changes nothing, while the name
 * stays the request's `Host` and TLS server name. Redirects are given back, never followed: the next hop's address
 * has not been checked; see `fetchFollowingRedirects`. Every call is checked; a kept connection (`connections`) is
 * reused only by a call whose check gave the address it goes to.
 *
 * The request is undici's `request`, its answer made a `Response` here: `fetch`'s own machinery (its Request and
 * Response, their streams, its redirect and CORS steps) cost several times what the request does, and callers read
 * only the status, the headers and the body (docs/decisions.md, "Outbound requests on a user's behalf"). It asks for
 * no compression (no `Accept-Encoding`), so the size limit counts the bytes the server sends.
 */
export function outboundFetch(options: OutboundFetchOptions): OutboundFetch {
  const resolve = options.resolve ?? systemResolve;
  return async (input, init) => {
    const limit = timeLimit(options.timeoutMs);
    const timeout = limit.signal;
    const signal = init?.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    const timedOut = () =>
      new OutboundLimitExceeded("time", `${hostOf(input)} did not answer within ${options.timeoutMs} ms`);
    let checked: CheckedUrl;
    try {
      checked = await raceAbort(checkUrl(input, options.policy, resolve), signal, timeout, timedOut);
    } catch (error) {
      limit.clear();
      throw error;
    }
    const connection = options.connections ? options.connections.lease(checked) : singleUse(checked);
    const lease = {
      dispatcher: connection.dispatcher,
      release: () => {
        limit.clear();
        connection.release();
      },
    };
    let response: Dispatcher.ResponseData;
    try {
      response = await undiciRequest(checked.url, {
        method: (init?.method?.toUpperCase() ?? "GET") as Dispatcher.HttpMethod,
        headers: requestHeaders(init?.headers),
        body: requestBody(init?.body),
        signal,
        dispatcher: lease.dispatcher,
      });
    } catch (error) {
      lease.release();
      throw timeout.aborted ? timedOut() : error;
    }
    let body: ReadableStream<Uint8Array> | null = null;
    if (bodiless.has(response.statusCode)) {
      // Read to its (empty) end, so that the connection can be used again.
      void response.body.dump().catch(() => {});
      lease.release();
    } else {
      body = limitBody(response.body, {
        maxBytes: options.maxResponseBytes,
        tooLarge: () =>
          new OutboundLimitExceeded(
            "size",
            `the answer from ${checked.host} is larger than ${options.maxResponseBytes} bytes`,
          ),
        timeout,
        timedOut,
        done: lease.release,
      });
    }
    const limited = new Response(body, { status: response.statusCode, headers: responseHeaders(response.headers) });
    // A constructed Response has no URL; readers resolve a relative `Location` or an SSE endpoint against it.
    Object.defineProperty(limited, "url", { value: checked.url.href });
    return limited;
  };
}

/** A fetch's headers as `request` takes them: an object or an iterable of pairs as they are, an array of pairs flat. */
function requestHeaders(headers: RequestInit["headers"]): Dispatcher.RequestOptions["headers"] {
  if (!Array.isArray(headers)) return headers as Dispatcher.RequestOptions["headers"];
  return headers.flat();
}

/** A fetch's body as `request` takes it: text and bytes (what the tool clients send); a form or a stream is refused. */
function requestBody(body: RequestInit["body"] | undefined): string | Uint8Array | null {
  if (body === undefined || body === null || typeof body === "string") return body ?? null;
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (body instanceof URLSearchParams) return body.toString();
  throw new TypeError("an outbound request's body must be text or bytes");
}

/** The answer's headers as pairs: a repeated header (`set-cookie`) is one pair per value. */
function responseHeaders(headers: Record<string, string | string[] | undefined>): [string, string][] {
  const pairs: [string, string][] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (Array.isArray(value)) for (const one of value) pairs.push([name, one]);
    else if (value !== undefined) pairs.push([name, value]);
  }
  return pairs;
}

function limitBody(
  source: Readable,
  limits: {
    maxBytes: number;
    tooLarge: () => Error;
    timeout: AbortSignal;
    timedOut: () => Error;
    done: () => void;
  },
): ReadableStream<Uint8Array> {
  const chunks = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  // A body given up (cut, cancelled) is destroyed, which undici reports as an error: the reader has already been told.
  source.on("error", () => {});
  let received = 0;
  const fail = (error: Error): never => {
    source.destroy();
    limits.done();
    throw error;
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let chunk: IteratorResult<Buffer>;
        try {
          chunk = await chunks.next();
        } catch (error) {
          return fail(limits.timeout.aborted ? limits.timedOut() : (error as Error));
        }
        if (chunk.done) {
          limits.done();
          controller.close();
          return;
        }
        received += chunk.value.byteLength;
        if (received > limits.maxBytes) return fail(limits.tooLarge());
        controller.enqueue(chunk.value);
      },
      cancel() {
        source.destroy();
        limits.done();
      },
    },
    // Read as the reader asks: the size limit then stops the transfer, not only what is handed on.
    { highWaterMark: 0 },
  );
}

/** The check may wait on DNS: the call's time limit and the caller's signal bound it too. */
async function raceAbort<T>(
  work: Promise<T>,
  signal: AbortSignal,
  timeout: AbortSignal,
  timedOut: () => Error,
): Promise<T> {
  // The work goes on after a lost race; its failure then has no one to tell.
  work.catch(() => {});
  signal.throwIfAborted();
  const { promise, reject } = Promise.withResolvers<never>();
  const onAbort = () => reject(timeout.aborted ? timedOut() : signal.reason);
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    return await Promise.race([work, promise]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

function hostOf(input: string | URL): string {
  try {
    return new URL(input).host;
  } catch {
    return "the tool's URL";
  }
}
