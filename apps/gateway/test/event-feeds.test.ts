import type { Readable } from "node:stream";
import { create } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import {
  type EventsService,
  type FollowEventsResponse,
  FollowEventsResponseSchema,
  RunKind,
} from "@loom/proto/events/v1/events_pb";
import { createLogger } from "@loom/telemetry/logger";
import { describe, expect, it, vi } from "vitest";
import { createEventFeeds, defaultEventFeedOptions, writeIntervalMs } from "../src/event-feeds.ts";

const keepAlive = () => create(FollowEventsResponseSchema, { kind: { case: "keepAlive", value: {} } });
const event = (offset: number) =>
  create(FollowEventsResponseSchema, {
    kind: { case: "event", value: { offset: BigInt(offset), type: `E${offset}` } },
  });

/** Ends the follow it reaches, as the events service does right after a run's terminal event. */
const complete = Symbol("complete");

/** An upstream the test drives by hand: `send` hands a message to the open follow, `fail` breaks it, `complete` ends it. */
function scriptedUpstream() {
  const queue: Array<FollowEventsResponse | Error | typeof complete> = [];
  let wake: (() => void) | undefined;
  let follows = 0;
  const client = {
    async *followEvents(_req: unknown, options: { signal: AbortSignal }) {
      follows += 1;
      while (!options.signal.aborted) {
        const next = queue.shift();
        if (next instanceof Error) throw next;
        if (next === complete) return;
        if (next) yield next;
        else await new Promise<void>((r) => (wake = r));
      }
    },
  } as unknown as Client<typeof EventsService>;
  const push = (item: FollowEventsResponse | Error | typeof complete) => (queue.push(item), wake?.());
  return {
    client,
    send: push,
    fail: (error: Error) => push(error),
    complete: () => push(complete),
    follows: () => follows,
  };
}

/** A live feed's stream (a finished log may come as one Buffer). */
function live(stream: Readable | Buffer): Readable {
  if (Buffer.isBuffer(stream)) throw new Error("a finished log, not a live stream");
  return stream;
}

/** A stream's whole text (a finished stream may be one Buffer). */
async function readAll(stream: Readable | Buffer): Promise<string> {
  if (Buffer.isBuffer(stream)) return stream.toString();
  let text = "";
  for await (const chunk of stream) text += chunk;
  return text;
}

/** Every chunk a stream gives, as the objects it pushed (flowing: async iteration would join buffered chunks into a copy). */
function chunksOf(stream: Readable | Buffer): Promise<Buffer[]> {
  if (Buffer.isBuffer(stream)) return Promise.resolve([stream]);
  const chunks: Buffer[] = [];
  return new Promise((resolve, reject) =>
    stream
      .on("data", (chunk: Buffer) => chunks.push(chunk))
      .once("end", () => resolve(chunks))
      .once("error", reject),
  );
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
const frames = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => `id: ${from + i}\ndata: {"type":"E${from + i}"}\n\n`).join("");

const request = (from: bigint, runId = "run", organizationId = "org") => ({
  runKind: RunKind.STRUCTURE_RUN,
  runId,
  organizationId,
  from,
  call: { headers: {}, signal: new AbortController().signal },
  toJson: (e: { type: string }) => JSON.stringify({ type: e.type }),
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
    const feeds = createEventFeeds(upstream.client, logger, {
      ...defaultEventFeedOptions,
      maxBehindBytes: 200,
      ...writeAtOnce,
    });
    upstream.send(keepAlive());
    const reader = live(await feeds.open(request(0n)));
    const stalled = live(await feeds.open(request(0n)));
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
    const a = live(await feeds.open(request(0n)));
    const b = live(await feeds.open(request(0n)));
    upstream.send(event(0));
    upstream.fail(new Error("events replica restarted"));
    const [textA, textB] = await Promise.all([readAll(a), readAll(b)]);
    expect(textA).toBe(': keep-alive\n\nid: 0\ndata: {"type":"E0"}\n\n');
    expect(textB).toBe(textA);
    expect(upstream.follows()).toBe(1);
    upstream.send(keepAlive());
    const c = live(await feeds.open(request(1n)));
    expect(upstream.follows()).toBe(2);
    c.destroy();
  });

  it("serves a joiner from the recent frames when they reach back to its start, else starts a feed at it", async () => {
    const upstream = scriptedUpstream();
    // Room for about three frames of ~30 characters.
    const feeds = createEventFeeds(upstream.client, logger, {
      ...defaultEventFeedOptions,
      recentBytes: 100,
      ...writeAtOnce,
    });
    upstream.send(keepAlive());
    const first = live(await feeds.open(request(0n)));
    let firstText = "";
    first.on("data", (chunk: Buffer) => (firstText += chunk));
    for (let offset = 0; offset < 10; offset++) upstream.send(event(offset));
    // The feed has taken all ten when its first subscriber has the last.
    await vi.waitFor(() => expect(firstText).toContain("id: 9\n"), { timeout: 5_000, interval: 1 });
    const recent = live(await feeds.open(request(8n)));
    expect(String(recent.read())).toBe(': keep-alive\n\nid: 8\ndata: {"type":"E8"}\n\nid: 9\ndata: {"type":"E9"}\n\n');
    expect(upstream.follows()).toBe(1);
    upstream.send(keepAlive());
    const behind = live(await feeds.open(request(2n)));
    expect(upstream.follows()).toBe(2);
    expect(feeds.upstreams()).toBe(2);
    [first, recent, behind].forEach((s) => s.destroy());
  });

  /** Plays a whole finished log of `events` events to the follow that is open, then completes it. */
  const finish = (upstream: ReturnType<typeof scriptedUpstream>, events: number) => {
    upstream.send(keepAlive());
    for (let offset = 0; offset < events; offset++) upstream.send(event(offset));
    upstream.complete();
  };

  it("serves the streams of a finished run from one upstream read, each the whole log once, the same Buffer to each", async () => {
    const upstream = scriptedUpstream();
    const feeds = createEventFeeds(upstream.client, logger, { ...defaultEventFeedOptions, ...writeAtOnce });
    // A crowd arriving before the first answer shares the first read.
    const crowd = Promise.all(Array.from({ length: 50 }, () => feeds.open(request(0n))));
    finish(upstream, 5);
    const whole = `: keep-alive\n\n${frames(0, 5)}`;
    for (const text of await Promise.all((await crowd).map(readAll))) expect(text).toBe(whole);
    // Later streams: were they to follow again, this follow would answer with nothing.
    upstream.send(keepAlive());
    upstream.complete();
    const later = await Promise.all(Array.from({ length: 50 }, () => feeds.open(request(0n))));
    const chunks = await Promise.all(later.map(chunksOf));
    for (const c of chunks) expect(Buffer.concat(c).toString()).toBe(whole);
    expect(chunks.every((c) => c.length === 1 && c[0] === chunks[0]![0])).toBe(true);
    expect(upstream.follows()).toBe(1);
    expect(feeds.upstreams()).toBe(0);
  });

  it("resumes in the middle of a finished log kept in memory, and just past its end gets the keep-alive alone", async () => {
    const upstream = scriptedUpstream();
    const feeds = createEventFeeds(upstream.client, logger, { ...defaultEventFeedOptions, ...writeAtOnce });
    const first = feeds.open(request(0n));
    finish(upstream, 6);
    await readAll(await first);
    upstream.send(keepAlive());
    upstream.complete();
    expect(await readAll(await feeds.open(request(4n)))).toBe(`: keep-alive\n\n${frames(4, 6)}`);
    expect(await readAll(await feeds.open(request(1n)))).toBe(`: keep-alive\n\n${frames(1, 6)}`);
    expect(await readAll(await feeds.open(request(6n)))).toBe(": keep-alive\n\n");
    expect(upstream.follows()).toBe(1);
    // Further on is followed (a structure run's log may grow after its terminal event).
    expect(await readAll(await feeds.open(request(9n)))).toBe(": keep-alive\n\n");
    expect(upstream.follows()).toBe(2);
  });

  it("keeps a finished log only once its feed read all of it, and not after a failed upstream", async () => {
    const upstream = scriptedUpstream();
    const feeds = createEventFeeds(upstream.client, logger, { ...defaultEventFeedOptions, ...writeAtOnce });
    const broken = feeds.open(request(0n));
    upstream.send(keepAlive());
    upstream.send(event(0));
    upstream.fail(new Error("events replica restarted"));
    await readAll(await broken);
    expect(feeds.finishedLogBytes()).toBe(0);
    // A resumer's feed keeps the log from its start only: a stream from before it follows again.
    const resumer = feeds.open(request(3n));
    upstream.send(keepAlive());
    upstream.send(event(3));
    upstream.complete();
    expect(await readAll(await resumer)).toBe(`: keep-alive\n\n${frames(3, 4)}`);
    expect(await readAll(await feeds.open(request(3n)))).toBe(`: keep-alive\n\n${frames(3, 4)}`);
    expect(upstream.follows()).toBe(2);
    const fresh = feeds.open(request(0n));
    finish(upstream, 4);
    expect(await readAll(await fresh)).toBe(`: keep-alive\n\n${frames(0, 4)}`);
    expect(upstream.follows()).toBe(3);
  });

  it("bounds the finished logs it keeps by bytes, the least recently used out first", async () => {
    const upstream = scriptedUpstream();
    // Room for two logs of three frames (about 100 bytes each), not three.
    const feeds = createEventFeeds(upstream.client, logger, {
      ...defaultEventFeedOptions,
      ...writeAtOnce,
      finishedLogBytes: 250,
    });
    for (const runId of ["a", "b"]) {
      const stream = feeds.open(request(0n, runId));
      finish(upstream, 3);
      await readAll(await stream);
    }
    expect(upstream.follows()).toBe(2);
    await readAll(await feeds.open(request(0n, "a"))); // a is now the more recently used
    const c = feeds.open(request(0n, "c"));
    finish(upstream, 3);
    await readAll(await c);
    expect(feeds.finishedLogBytes()).toBeLessThanOrEqual(250);
    expect(upstream.follows()).toBe(3);
    await readAll(await feeds.open(request(0n, "a")));
    expect(upstream.follows()).toBe(3);
    const b = feeds.open(request(0n, "b"));
    finish(upstream, 3);
    expect(await readAll(await b)).toBe(`: keep-alive\n\n${frames(0, 3)}`);
    expect(upstream.follows()).toBe(4);
  });

  it("never serves one organization's finished log to another", async () => {
    const upstream = scriptedUpstream();
    const feeds = createEventFeeds(upstream.client, logger, { ...defaultEventFeedOptions, ...writeAtOnce });
    const mine = feeds.open(request(0n, "run", "org-a"));
    finish(upstream, 3);
    await readAll(await mine);
    // Another organization asking for the same run id follows on its own call (where the events service checks its access).
    const theirs = feeds.open(request(0n, "run", "org-b"));
    upstream.fail(new Error("structure run not found"));
    await expect(theirs).rejects.toThrow("structure run not found");
    expect(upstream.follows()).toBe(2);
  });

  it("a crowd joining a live run over many turns shares its follow and the buffers the others got", async () => {
    const upstream = scriptedUpstream();
    const feeds = createEventFeeds(upstream.client, logger, { ...defaultEventFeedOptions, ...writeAtOnce });
    upstream.send(keepAlive());
    const first = await feeds.open(request(0n));
    const firstChunks = chunksOf(first);
    const joiners: Array<Promise<Buffer[]>> = [];
    for (let offset = 0; offset < 20; offset++) {
      upstream.send(event(offset));
      await new Promise((r) => setImmediate(r));
      for (let j = 0; j < 5; j++) joiners.push(feeds.open(request(0n)).then(chunksOf));
      await new Promise((r) => setImmediate(r));
    }
    upstream.complete();
    const whole = `: keep-alive\n\n${frames(0, 20)}`;
    const written = await firstChunks;
    // The bytes of a chunk the first subscriber got (the same memory, not a copy).
    const shared = (c: Buffer) =>
      written.some(
        (w) =>
          w.buffer === c.buffer && c.byteOffset >= w.byteOffset && c.byteOffset + c.length <= w.byteOffset + w.length,
      );
    for (const chunks of await Promise.all(joiners)) {
      expect(Buffer.concat(chunks).toString()).toBe(whole);
      expect(chunks.filter((c) => c.toString() !== ": keep-alive\n\n").every(shared)).toBe(true);
    }
    expect(upstream.follows()).toBe(1);
  });

  it("answers every stream waiting on a feed with the whole log at once when the first message held it to its end", async () => {
    const upstream = scriptedUpstream();
    const feeds = createEventFeeds(upstream.client, logger, { ...defaultEventFeedOptions, ...writeAtOnce });
    const events = [0, 1, 2].map((offset) => ({ offset: BigInt(offset), type: `E${offset}` }));
    upstream.send(create(FollowEventsResponseSchema, { kind: { case: "batch", value: { events, last: true } } }));
    const [a, b] = await Promise.all([feeds.open(request(0n)), feeds.open(request(0n))]);
    // One Buffer, the same for both: the whole response in one write.
    expect(Buffer.isBuffer(a)).toBe(true);
    expect(b).toBe(a);
    expect(a.toString()).toBe(`: keep-alive\n\n${frames(0, 3)}`);
    expect(feeds.upstreams()).toBe(0);
    // Kept as a finished log: a later stream, from any offset, needs no upstream.
    expect(await readAll(await feeds.open(request(2n)))).toBe(`: keep-alive\n\n${frames(2, 3)}`);
    expect(upstream.follows()).toBe(1);
  });

  it("streams batches of a live run as they come, the same bytes as one event a message", async () => {
    const upstream = scriptedUpstream();
    const feeds = createEventFeeds(upstream.client, logger, { ...defaultEventFeedOptions, ...writeAtOnce });
    const batch = (from: number, to: number, last = false) =>
      create(FollowEventsResponseSchema, {
        kind: {
          case: "batch",
          value: { events: range(from, to).map((o) => ({ offset: BigInt(o), type: `E${o}` })), last },
        },
      });
    upstream.send(batch(0, 2));
    const stream = live(await feeds.open(request(0n)));
    const text = readAll(stream);
    upstream.send(batch(2, 5));
    upstream.send(event(5));
    upstream.send(batch(6, 8, true));
    upstream.complete();
    expect(await text).toBe(`: keep-alive\n\n${frames(0, 8)}`);
  });

  it("rejects before streaming when the upstream's first answer is an error", async () => {
    const upstream = scriptedUpstream();
    const feeds = createEventFeeds(upstream.client, logger);
    upstream.fail(new Error("structure run not found"));
    await expect(feeds.open(request(0n))).rejects.toThrow("structure run not found");
    expect(feeds.upstreams()).toBe(0);
  });
});
