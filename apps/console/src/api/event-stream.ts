import { createParser } from "eventsource-parser";
import { errorOf, headersFor } from "./request.ts";

/** One event of a run's log, as the API lists and streams it. */
export interface RunEvent {
  event_id: string;
  type: string;
  origin: string;
  timestamp: number;
  created_at: string;
  payload: Record<string, unknown>;
}

/** How long to wait before following again after the connection dropped mid-run. */
const retryDelayMs = 1_000;

/**
 * Follows an event stream (`…/events/stream`) from `offset`: each event is
 * handed to `onEvent` with its offset, and the promise resolves when the
 * server ends the stream (the run ended). `fetch`, not `EventSource`: the key
 * goes in the Authorization header, never in a URL. A dropped connection is
 * followed again from just after the last event received (the `offset` query),
 * so nothing is missed or shown twice; an error answer (a 404, a revoked key)
 * rejects. `signal` stops following (leaving the screen).
 */
export async function followEvents(
  key: string,
  path: string,
  onEvent: (event: RunEvent, offset: number) => void,
  signal: AbortSignal,
  offset = 0,
): Promise<void> {
  let next = offset;
  for (;;) {
    let response: Response;
    try {
      response = await fetch(`${path}?offset=${next}`, {
        headers: { ...headersFor(key, false), accept: "text/event-stream" },
        signal,
      });
    } catch {
      if (!(await retryUnlessAborted(signal))) return;
      continue;
    }
    if (!response.ok) throw await errorOf(response);
    const parser = createParser({
      onEvent: (message) => {
        const at = Number(message.id);
        onEvent(JSON.parse(message.data) as RunEvent, at);
        next = at + 1;
      },
    });
    try {
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return; // The server closed it: the run ended.
        parser.feed(decoder.decode(value, { stream: true }));
      }
    } catch {
      if (!(await retryUnlessAborted(signal))) return;
    }
  }
}

/** After a dropped connection: waits a moment, and says whether to follow again (not when the screen was left). */
async function retryUnlessAborted(signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return false;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, retryDelayMs);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return !signal.aborted;
}
