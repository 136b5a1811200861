import type { Resolve } from "@loom/outbound/check";
import type { PinnedConnections } from "@loom/outbound/connections";
import { OutboundLimitExceeded, OutboundRefused } from "@loom/outbound/errors";
import { type OutboundFetch, outboundFetch } from "@loom/outbound/fetch";
import type { OutboundPolicy } from "@loom/outbound/policy";
import { fetchFollowingRedirects } from "@loom/outbound/redirects";
import { timeLimit } from "@loom/runtime/time-limit";

/** How every call of a tool's server is bounded (the tools service's settings and the deployment's policy). */
export interface CallLimits {
  policy: OutboundPolicy;
  timeoutMs: number;
  maxResponseBytes: number;
  /** Tests map names to addresses without DNS. */
  resolve?: Resolve;
  /** Keep-alive connections to the checked addresses, shared by every call of the service. */
  connections?: PinnedConnections;
}

/** Why a call ended without an answer: the caller left, the time ran out, or the outbound guard stopped it. */
export type CallStop =
  | { kind: "cancelled" }
  | { kind: "timeout"; message: string }
  | { kind: "refused"; error: OutboundRefused }
  | { kind: "limit"; message: string };

/**
 * One call's bounds, shared by every HTTP request the call makes (an MCP client sends several): one signal that
 * aborts when the caller goes away, when the time limit passes, or when the outbound guard stops a request; and a
 * fetch through the guard that follows redirects only to addresses it checks again.
 *
 * The guard's failures are turned into an abort of the whole call because an MCP client reads an SSE answer in the
 * background: a body cut at the size limit surfaces as a stream error the pending request never sees, and the call
 * would wait for its time limit (see docs/decisions.md, "Calling tool servers").
 */
export function callScope(limits: CallLimits, caller: AbortSignal) {
  const stopped = new AbortController();
  const limit = timeLimit(limits.timeoutMs);
  const timeout = limit.signal;
  const signal = AbortSignal.any([caller, timeout, stopped.signal]);
  const guarded = outboundFetch({
    policy: limits.policy,
    timeoutMs: limits.timeoutMs,
    maxResponseBytes: limits.maxResponseBytes,
    ...(limits.resolve ? { resolve: limits.resolve } : {}),
    ...(limits.connections ? { connections: limits.connections } : {}),
  });
  // The guard's error is kept here, and the call aborted with a plain AbortError: what the client left waiting on
  // the signal rejects with that, which it knows to ignore, rather than with the guard's error.
  let guardError: OutboundRefused | OutboundLimitExceeded | undefined;
  const stopOn = (error: unknown) => {
    if (!(error instanceof OutboundRefused || error instanceof OutboundLimitExceeded) || guardError) return;
    guardError = error;
    stopped.abort();
  };
  const fetch: OutboundFetch = async (input, init) => {
    const own = init?.signal ? AbortSignal.any([init.signal, signal]) : signal;
    try {
      const response = await fetchFollowingRedirects(guarded, input, { ...init, signal: own });
      return response.body ? withBody(response, watched(response.body, stopOn)) : response;
    } catch (error) {
      stopOn(error);
      throw error;
    }
  };
  return {
    signal,
    fetch,
    /** The call is over: its time limit no longer runs. */
    end: limit.clear,
    /** Why the call stopped, when it did; undefined when the error is the server's or the connection's own. */
    stop(): CallStop | undefined {
      const reason = guardError;
      if (reason instanceof OutboundRefused) return { kind: "refused", error: reason };
      if (reason instanceof OutboundLimitExceeded && reason.limit !== "time")
        return { kind: "limit", message: reason.message };
      if (caller.aborted) return { kind: "cancelled" };
      if (timeout.aborted || reason instanceof OutboundLimitExceeded)
        return { kind: "timeout", message: `the tool server did not answer within ${limits.timeoutMs} ms` };
      return undefined;
    },
  };
}

export type CallScope = ReturnType<typeof callScope>;

/** The body as read, telling `onError` what broke it. */
function watched(body: ReadableStream<Uint8Array>, onError: (error: unknown) => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const chunk = await reader.read();
        if (chunk.done) controller.close();
        else controller.enqueue(chunk.value);
      } catch (error) {
        onError(error);
        controller.error(error);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

function withBody(response: Response, body: ReadableStream<Uint8Array>): Response {
  const wrapped = new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  Object.defineProperty(wrapped, "url", { value: response.url });
  return wrapped;
}
