import { describe, expect, it } from "vitest";
import type { Readable } from "node:stream";
import { create } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { FollowEventsResponseSchema, RunKind, type EventsService, type FollowEventsResponse } from "@loom/proto/events/v1/events_pb";
import { createLogger } from "@loom/kit/logger";
import { createEventFeeds, defaultEventFeedOptions, writeIntervalMs } from "../src/event-feeds.ts";

const keepAlive = () => create(FollowEventsResponseSchema, { kind: { case: "keepAlive", value: {} } });
const event = (offset: number) => create(FollowEventsResponseSchema, { kind: { case: "event", value: { offset: BigInt(offset), type: `E${offset}` } } });

/** An upstream the test drives by hand: `send` hands a message to the open follow, `fail` breaks it. */
function scriptedUpstream() {
  const queue: Array<FollowEventsResponse | Error> = [];
  let wake: (() => void) | undefined;
  let follows = 0;
  const client = {
    async *followEvents(_req: unknown, options: { signal: AbortSignal }) {
      follows += 1;
      while (!options.signal.aborted) {
        const next = queue.shift();
        if (next instanceof Error) throw next;
        if (next) yield next;
        else await new Promise<void>((r) => (wake = r));
      }
    },
  } as unknown as Client<typeof EventsService>;
  const push = (item: FollowEventsResponse | Error) => (queue.push(item), wake?.());
  return { client, send: push, fail: (error: Error) => push(error), follows: () => follows };
}

async function readAll(stream: Readable): Promise<string> {
  let text = "";
  for await (const chunk of stream) text += chunk;
  return text;
}

const request = (from: bigint) => ({
  runKind: RunKind.STRUCTURE_RUN,
  runId: "run",
  organizationId: "org",
  from,
  call: { headers: {}, signal: new AbortController().signal },
  toJson: (e: { type: string }) => ({ type: e.type }),
});

/** No write interval: every frame is written in the next turn. */
const writeAtOnce = { minWriteIntervalMs: 0, maxWriteIntervalMs: 0 };

describe("event feeds", () => {
  const logger = createLogger("test", "silent");

  it("spaces a feed's writes further as its subscribers grow, within 20 and 40 ms", () => {
    const at = (subscribers: number) => writeIntervalMs(subscribers, defaultEventFeedOptions);
    expect([at(1), at(100), at(500)]).toEqual([20, 20, 20]);
    expect(at(750)).toBe(30);
    expect([at(1_000), at(100_000)]).toEqual([40, 40]);
  });

  it("lets a subscriber that falls too far behind go, without holding up the others", async () => {
    const upstream = scriptedUpstream();
    const feeds = createEventFeeds(upstream.client, logger, { ...defaultEventFeedOptions, maxBehindBytes: 200, ...writeAtOnce });
    upstream.send(keepAlive());
    const reader = await feeds.open(request(0n));
    const stalled = await feeds.open(request(0n));
    stalled.pause();
    const read = readAll(reader);
    for (let offset = 0; offset < 20; offset++) {
      upstream.send(event(offset));
      await new Promise((r) => setImmediate(r));
    }
    upstream.send(event(20));
    await new Promise((r) => setTimeout(r, 10));
    // The stalled one's stream ended after a bounded buffer; the reader still has everything.
    const stalledText = await readAll(stalled.resume());
    expect(stalledText.length).toBeLessThan(600);
    expect(stalledText).not.toContain("id: 20\n");
    upstream.fail(new Error("upstream gone"));
    const text = await read;
    expect(text.match(/^id: \d+$/gm)).toEqual(Array.from({ length: 21 }, (_, i) => `id: ${i}`));
    expect(feeds.upstreams()).toBe(0);
  });

  it("ends every stream of a feed when its upstream fails, and the next subscriber starts a new follow", async () => {
    const upstream = scriptedUpstream();
    const feeds = createEventFeeds(upstream.client, logger, { ...defaultEventFeedOptions, ...writeAtOnce });
    upstream.send(keepAlive());
    const a = await feeds.open(request(0n));
    const b = await feeds.open(request(0n));
    upstream.send(event(0));
    upstream.fail(new Error("events replica restarted"));
    const [textA, textB] = await Promise.all([readAll(a), readAll(b)]);
    expect(textA).toBe(": keep-alive\n\nid: 0\ndata: {\"type\":\"E0\"}\n\n");
    expect(textB).toBe(textA);
    expect(upstream.follows()).toBe(1);
    upstream.send(keepAlive());
    const c = await feeds.open(request(1n));
    expect(upstream.follows()).toBe(2);
    c.destroy();
  });

  it("serves a joiner from the recent frames when they reach back to its start, else starts a feed at it", async () => {
    const upstream = scriptedUpstream();
    // Room for about three frames of ~30 characters.
    const feeds = createEventFeeds(upstream.client, logger, { ...defaultEventFeedOptions, recentChars: 100, ...writeAtOnce });
    upstream.send(keepAlive());
    const first = await feeds.open(request(0n));
    for (let offset = 0; offset < 10; offset++) upstream.send(event(offset));
    await new Promise((r) => setTimeout(r, 10));
    const recent = await feeds.open(request(8n));
    expect(String(recent.read())).toBe(': keep-alive\n\nid: 8\ndata: {"type":"E8"}\n\nid: 9\ndata: {"type":"E9"}\n\n');
    expect(upstream.follows()).toBe(1);
    upstream.send(keepAlive());
    const behind = await feeds.open(request(2n));
    expect(upstream.follows()).toBe(2);
    expect(feeds.upstreams()).toBe(2);
    [first, recent, behind].forEach((s) => s.destroy());
  });

  it("rejects before streaming when the upstream's first answer is an error", async () => {
    const upstream = scriptedUpstream();
    const feeds = createEventFeeds(upstream.client, logger);
    upstream.fail(new Error("structure run not found"));
    await expect(feeds.open(request(0n))).rejects.toThrow("structure run not found");
    expect(feeds.upstreams()).toBe(0);
  });
});
