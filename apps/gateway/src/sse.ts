/**
 * Server-sent events framing of docs/behaviour.md §6: one frame per event,
 * `id: <offset>` and `data: <event JSON>` and a blank line, with no `event:`
 * field (so a browser EventSource gets every event through onmessage); a
 * keep-alive is a comment line.
 */
export function eventFrame(offset: bigint, json: string): string {
  return `id: ${offset}\ndata: ${json}\n\n`;
}

export const keepAliveFrame = ": keep-alive\n\n";

/** The keep-alive encoded once, for streams that send bytes. */
export const keepAliveBytes = Buffer.from(keepAliveFrame);
