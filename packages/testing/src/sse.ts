import { createParser, type EventSourceMessage } from "eventsource-parser";

/** One server-sent-events response, read frame by frame with eventsource-parser. */
export interface SseConnection {
  status: number;
  headers: Headers;
  /** Every event received so far, in order. */
  events: EventSourceMessage[];
  /** Keep-alive comments received so far. */
  comments: string[];
  /**
   * Resolves when the server closes the stream (or `close()` went away);
   * rejects if reading failed otherwise (a connection cut mid-stream), so a
   * test cannot mistake a broken stream for an ended one.
   */
  ended: Promise<void>;
  /** Resolves once `count` events have arrived (or the stream ends). */
  waitFor(count: number): Promise<EventSourceMessage[]>;
  /** Goes away, as a client that disconnects. */
  close(): void;
  /** The body, when the answer was not a stream (an error). */
  errorBody?: unknown;
}

/** `post`: a JSON body to POST instead of a GET (the chat stream). */
export async function openSse(
  url: string,
  headers: Record<string, string> = {},
  post?: unknown,
): Promise<SseConnection> {
  const controller = new AbortController();
  const init =
    post === undefined
      ? {}
      : {
          method: "POST",
          body: JSON.stringify(post),
          headers: { accept: "text/event-stream", "content-type": "application/json", ...headers },
        };
  const res = await fetch(url, {
    headers: { accept: "text/event-stream", ...headers },
    signal: controller.signal,
    ...init,
  });
  const events: EventSourceMessage[] = [];
  const comments: string[] = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const notify = () => {
    for (const w of [...waiters]) if (events.length >= w.count) waiters.splice(waiters.indexOf(w), 1) && w.resolve();
  };
  if (!res.headers.get("content-type")?.startsWith("text/event-stream")) {
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      events,
      comments,
      ended: Promise.resolve(),
      waitFor: async () => events,
      close: () => {},
      errorBody: text ? JSON.parse(text) : undefined,
    };
  }
  const parser = createParser({ onEvent: (e) => (events.push(e), notify()), onComment: (c) => comments.push(c) });
  const ended = (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
        parser.feed(decoder.decode(chunk, { stream: true }));
    } catch (error) {
      if (!controller.signal.aborted)
        throw new Error(`the stream broke after ${events.length} events`, { cause: error });
    } finally {
      waiters.splice(0).forEach((w) => w.resolve());
    }
  })();
  ended.catch(() => {}); // a test that never awaits it is not failed by an unhandled rejection; one that does sees it
  return {
    status: res.status,
    headers: res.headers,
    events,
    comments,
    ended,
    waitFor: (count) =>
      events.length >= count
        ? Promise.resolve(events)
        : new Promise<void>((resolve) => waiters.push({ count, resolve })).then(() => events),
    close: () => controller.abort(),
  };
}
