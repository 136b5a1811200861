import type { FollowEventsResponse } from "@loom/proto/events/v1/events_pb";

/**
 * Server-sent events framing of semantics.md §6: one frame per event,
 * `id: <offset>` and `data: <event JSON>` and a blank line, with no `event:`
 * field (so a browser EventSource gets every event through onmessage); a
 * keep-alive is a comment line.
 */
export function eventFrame(offset: bigint, json: unknown): string {
  return `id: ${offset}\ndata: ${JSON.stringify(json)}\n\n`;
}

export const keepAliveFrame = ": keep-alive\n\n";

/**
 * Waits for the follow's first message (a keep-alive that says the log
 * exists and the subscription is in place) before anything is written, so a
 * failure before streaming is an ordinary error response. Then frames the rest.
 */
export async function sseStream(
  follow: AsyncIterable<FollowEventsResponse>,
  toJson: (event: NonNullable<Extract<FollowEventsResponse["kind"], { case: "event" }>["value"]>) => unknown,
): Promise<AsyncIterable<string>> {
  const messages = follow[Symbol.asyncIterator]();
  const first = await messages.next();
  async function* frames(): AsyncGenerator<string> {
    if (first.done) return;
    let next: IteratorResult<FollowEventsResponse> = first;
    while (!next.done) {
      const kind = next.value.kind;
      if (kind.case === "event") yield eventFrame(kind.value.offset, toJson(kind.value));
      else yield keepAliveFrame;
      next = await messages.next();
    }
  }
  return frames();
}
