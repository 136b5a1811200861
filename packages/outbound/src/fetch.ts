import { timeLimit } from "@loom/runtime/time-limit";
import { type RequestInit as UndiciRequestInit, fetch as undiciFetch } from "undici";
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
 * stays the request's `Host` and TLS server name. Redirects are given back (`redirect: "manual"`), never followed:
 * the next hop's address has not been checked; see `fetchFollowingRedirects`. Every call is checked; a kept connection
 * (`connections`) is reused only by a call whose check gave the address it goes to.
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
    let response: Awaited<ReturnType<typeof undiciFetch>>;
    try {
      response = await undiciFetch(checked.url, {
        ...(init as UndiciRequestInit),
        signal,
        redirect: "manual",
        dispatcher: lease.dispatcher,
      });
    } catch (error) {
      lease.release();
      throw timeout.aborted ? timedOut() : error;
    }
    let body: ReadableStream<Uint8Array> | null = null;
    if (response.body && !bodiless.has(response.status)) {
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
    } else lease.release();
    const limited = new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers as unknown as Headers,
    });
    // A constructed Response has no URL; readers resolve a relative `Location` or an SSE endpoint against it.
    Object.defineProperty(limited, "url", { value: response.url });
    return limited;
  };
}

function limitBody(
  source: ReadableStream<Uint8Array>,
  limits: {
    maxBytes: number;
    tooLarge: () => Error;
    timeout: AbortSignal;
    timedOut: () => Error;
    done: () => void;
  },
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let received = 0;
  const fail = async (error: Error): Promise<never> => {
    await reader.cancel(error).catch(() => {});
    limits.done();
    throw error;
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
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
    async cancel(reason) {
      await reader.cancel(reason);
      limits.done();
    },
  });
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
