import { Readable } from "node:stream";
import type { Client } from "@connectrpc/connect";
import { type EventsService, type FollowEventsResponse, RunKind } from "@loom/proto/events/v1/events_pb";
import type { Logger } from "@loom/telemetry/logger";
import { createFinishedLogs, type FinishedLog, finishedLogFrom } from "./finished-logs.ts";
import { eventsDelivered } from "./metrics.ts";
import { eventFrame, keepAliveBytes, keepAliveFrame } from "./sse.ts";
import { deliverEvent } from "./sse-tracing.ts";

type FollowedEvent = Extract<FollowEventsResponse["kind"], { case: "event" }>["value"];

export interface StreamRequest {
  runKind: RunKind;
  runId: string;
  organizationId: string;
  /** First offset to send. */
  from: bigint;
  /** The route's call: the caller's principal headers, and a signal that aborts when the client goes away. */
  call: { headers: Record<string, string>; signal: AbortSignal };
  /** The public JSON text of an event. */
  toJson: (event: FollowedEvent) => string;
}

export interface EventFeedOptions {
  /**
   * Bytes of recent frames a feed keeps, so a subscriber joining (or
   * resuming) a little behind it needs no store read. Bounded by size, not
   * count: every live run on a replica has a feed.
   */
  recentBytes: number;
  /**
   * Bytes of finished logs kept encoded, least recently used out first: a
   * stream of a finished run is served from them without a store read. A
   * log is kept when its feed held all of it (up to recentBytes).
   */
  finishedLogBytes: number;
  /** Bytes a subscriber may fall behind before its stream is ended (it resumes with Last-Event-ID). */
  maxBehindBytes: number;
  keepAliveSeconds: number;
  /**
   * Writes to a socket at most every minWriteIntervalMs: a quiet run's event
   * goes out at once, a busy run's events go out together. Each write costs a
   * syscall per subscriber, so a feed with many subscribers spaces its writes
   * further, up to maxWriteIntervalMs, to stay near writesPerSecond in all
   * (see writeIntervalMs; measured in docs/benchmarks.md).
   */
  minWriteIntervalMs: number;
  maxWriteIntervalMs: number;
  writesPerSecond: number;
}

export const defaultEventFeedOptions: EventFeedOptions = {
  recentBytes: 256 * 1024,
  finishedLogBytes: 64 * 1024 * 1024,
  maxBehindBytes: 4 * 1024 * 1024,
  keepAliveSeconds: 15,
  minWriteIntervalMs: 20,
  maxWriteIntervalMs: 40,
  writesPerSecond: 25_000,
};

/** How long a feed with this many subscribers waits between writes: 20 ms up to 500 subscribers, then longer, at most 40 ms. */
export function writeIntervalMs(subscribers: number, options: EventFeedOptions): number {
  const spread = (subscribers * 1000) / options.writesPerSecond;
  return Math.min(options.maxWriteIntervalMs, Math.max(options.minWriteIntervalMs, spread));
}

export interface EventFeeds {
  /**
   * An SSE stream of one log from `req.from`. Resolves once the stream is in
   * place; an unknown run rejects before anything is written. A finished log
   * from its start is the kept Buffer itself: the whole response in one write.
   */
  open(req: StreamRequest): Promise<Readable | Buffer>;
  /** Upstream follows open now (for tests). */
  upstreams(): number;
  /** Bytes of finished logs kept (for tests). */
  finishedLogBytes(): number;
}

/**
 * Fan-out at the edge (docs/decisions.md, Events: "Fan-out at the edge"):
 * the SSE subscribers of a run on this gateway share upstream FollowEvents;
 * each event is framed and encoded once, and the frames that arrive together
 * go out as one write per socket. A subscriber joins a feed of its run that
 * has everything from its start offset on (the feed's recent frames reach
 * back that far, and it has not yet gone past it); for any other start, a new
 * feed starts there, which later subscribers join in turn. The last
 * subscriber to leave a feed closes its upstream.
 *
 * A feed that ends with its upstream's completion (after the terminal event)
 * and still holds every frame from its start leaves that finished log,
 * encoded once, to later streams of the run (docs/decisions.md, "SSE
 * streams": replays of finished runs).
 */
export function createEventFeeds(
  events: Client<typeof EventsService>,
  logger: Logger,
  options: EventFeedOptions = defaultEventFeedOptions,
): EventFeeds {
  /** A run's feeds, by organization and run (a caller never rides on another organization's follow). */
  const feeds = new Map<string, Set<Feed>>();
  /** Finished logs, by the same key: a caller is only ever served its own organization's. */
  const finished = createFinishedLogs(options.finishedLogBytes);
  let count = 0;

  function startFeed(key: string, req: StreamRequest): Feed {
    const ofRun = feeds.get(key) ?? new Set<Feed>();
    const feed = new Feed(req, options, logger, (log) => {
      // Kept before the feed leaves the map: a stream opened next finds one or the other.
      if (log) finished.put(key, log);
      count -= 1;
      ofRun.delete(feed);
      if (ofRun.size === 0 && feeds.get(key) === ofRun) feeds.delete(key);
    });
    feeds.set(key, ofRun.add(feed));
    count += 1;
    // Not awaited: the feed outlives the request that started it, and run catches the upstream's errors itself
    // (its outcome reaches the streams through ready and their end).
    void feed.run(
      events.followEvents(followRequest(req, options), { headers: req.call.headers, signal: feed.abort.signal }),
    );
    return feed;
  }

  return {
    async open(req) {
      const key = `${req.organizationId}/${req.runKind}/${req.runId}`;
      const log = finished.get(key);
      const replay = log && replayOf(log, req.from);
      if (replay) return replay;
      for (const feed of feeds.get(key) ?? []) {
        const subscriber = feed.join(req.from, req.call.signal);
        if (subscriber) return streamOf(feed, subscriber, req.from);
      }
      const feed = startFeed(key, req);
      // A new feed starts at this subscriber's offset: it always takes it.
      return streamOf(feed, feed.join(req.from, req.call.signal)!, req.from);
    },
    upstreams: () => count,
    finishedLogBytes: () => finished.bytes(),
  };
}

/** A subscriber's answer once its feed is ready: the whole log at once when the feed found it finished, else its stream. */
async function streamOf(feed: Feed, subscriber: Readable, from: bigint): Promise<Readable | Buffer> {
  const whole = await feed.ready;
  // A subscriber that joined before the feed was ready starts where the feed does: the whole log serves it.
  return (whole && replayOf(whole, from)) || subscriber;
}

/** The answer to a stream from `from` that `log` holds: its bytes in one Buffer when it can be. */
function replayOf(log: FinishedLog, from: bigint): Readable | Buffer | undefined {
  const replay = finishedLogFrom(log, from);
  if (!replay) return undefined;
  eventsDelivered.inc(eventsFrom(log, from));
  return replay.length === 1 ? replay[0]! : finishedStream(replay);
}

/** How many of a finished log's events a stream from `from` gets. */
function eventsFrom(log: FinishedLog, from: bigint): number {
  let count = 0;
  for (let i = log.offsets.length - 1; i >= 0 && log.offsets[i]! >= from; i--) count++;
  return count;
}

/** A stream of a finished log: its shared bytes, then the end. */
function finishedStream(buffers: Buffer[]): Readable {
  const out = new Readable({ read() {} });
  for (const buffer of buffers) out.push(buffer);
  out.push(null);
  return out;
}

/** A frame a feed wrote: where it sits in the Buffer that went to every subscriber then. */
interface WrittenFrame {
  offset: bigint;
  chunk: Buffer;
  start: number;
  end: number;
}

/** The frames' bytes as views of the chunks they were written in, one view per run of frames from the same chunk (no copy). */
function viewsOf(frames: WrittenFrame[]): Buffer[] {
  const views: Buffer[] = [];
  for (let i = 0; i < frames.length; ) {
    const { chunk, start } = frames[i]!;
    let j = i + 1;
    while (j < frames.length && frames[j]!.chunk === chunk) j++;
    const end = frames[j - 1]!.end;
    views.push(start === 0 && end === chunk.length ? chunk : chunk.subarray(start, end));
    i = j;
  }
  return views;
}

function followRequest(req: StreamRequest, options: EventFeedOptions) {
  return {
    runKind: req.runKind,
    runId: req.runId,
    fromOffset: req.from,
    keepAliveInterval: { seconds: BigInt(options.keepAliveSeconds) },
    batches: true,
    acceptsPayloadJson: true,
  };
}

/** Why a feed's upstream follow is let go: one shared reason, not a DOMException (with its stack) per feed. */
const feedEnded = new DOMException("the feed ended", "AbortError");

/** One upstream follow and the subscribers it feeds. */
class Feed {
  readonly abort = new AbortController();
  /**
   * Settles with the upstream's first message: the log exists and the follow
   * is in place. Resolves with the whole log when that message held it to its
   * end (a finished run): the feed has ended, and its streams are served that.
   */
  readonly ready: Promise<FinishedLog | undefined>;
  private settleReady!: (error?: unknown, whole?: FinishedLog) => void;
  /** Whether `ready` has settled. */
  private started = false;
  private readonly subscribers = new Set<Readable>();
  /** Recent frames, oldest first, as written. */
  private readonly recent: WrittenFrame[] = [];
  private recentBytes = 0;
  /** The lowest start offset the recent frames serve completely. */
  private coveredFrom: bigint;
  /** The offset of the last frame received (from − 1 before the first). */
  private last: bigint;
  /** Frames received since the last write (a keep-alive has no offset). */
  private pending: Array<{ frame: string; offset?: bigint }> = [];
  private flushScheduled = false;
  private lastFlush = 0;
  private ended = false;

  private readonly req: StreamRequest;
  private readonly options: EventFeedOptions;
  private readonly logger: Logger;
  /** Called once when the feed ends, with the finished log when the upstream completed and the feed holds all of it. */
  private readonly onEnd: (finished: FinishedLog | undefined) => void;

  constructor(
    req: StreamRequest,
    options: EventFeedOptions,
    logger: Logger,
    onEnd: (finished: FinishedLog | undefined) => void,
  ) {
    this.req = req;
    this.options = options;
    this.logger = logger;
    this.onEnd = onEnd;
    this.coveredFrom = req.from;
    this.last = req.from - 1n;
    this.ready = new Promise((resolve, reject) => {
      this.settleReady = (error, whole) => {
        this.started = true;
        if (error === undefined) resolve(whole);
        else reject(error);
      };
    });
    this.ready.catch(() => {}); // each joiner sees the rejection through its own await
  }

  /** A stream for a subscriber starting at `from`, or undefined when this feed cannot serve that start. */
  join(from: bigint, signal: AbortSignal): Readable | undefined {
    if (this.ended || from > this.last + 1n) return undefined;
    // Frames not yet written go to the others first: the recent ones then reach the joiner exactly once.
    this.flush();
    if (from < this.coveredFrom) return undefined;
    const out = new Readable({ read() {} });
    // The keep-alive first, as on every stream: it sends the headers at once.
    out.push(keepAliveBytes);
    // The recent frames as views of the buffers the others got: a crowd joining costs no copies.
    const first = this.recent.findIndex((f) => f.offset >= from);
    if (first !== -1) {
      for (const view of viewsOf(this.recent.slice(first))) out.push(view);
      eventsDelivered.inc(this.recent.length - first);
    }
    this.subscribers.add(out);
    const leave = () => this.leave(out);
    signal.addEventListener("abort", leave, { once: true });
    out.once("close", () => {
      signal.removeEventListener("abort", leave);
      leave();
    });
    if (signal.aborted) leave();
    return out;
  }

  private leave(out: Readable): void {
    if (!this.subscribers.delete(out)) return;
    out.push(null);
    if (this.subscribers.size === 0) this.end();
  }

  async run(messages: AsyncIterable<FollowEventsResponse>): Promise<void> {
    let first = true;
    let completed = false;
    try {
      for await (const message of messages) {
        const kind = message.kind;
        if (kind.case === "batch") for (const event of kind.value.events) this.deliver(event);
        else if (kind.case === "event") this.deliver(kind.value);
        // The first keep-alive only says the follow is in place: every stream starts with one of its own.
        else if (kind.case === "keepAlive" && !first) this.queue(keepAliveFrame);
        if (first) {
          first = false;
          const whole = kind.case === "batch" && kind.value.last ? this.wholeLog() : undefined;
          this.settleReady(undefined, whole);
          if (whole) {
            this.end(whole);
            return;
          }
        }
      }
      // Completion (OK) comes only right after the terminal event (events.proto): the log is final.
      completed = !first && !this.abort.signal.aborted;
    } catch (error) {
      if (first) this.settleReady(error);
      else if (!this.abort.signal.aborted)
        this.logger.warn(
          { err: error, runId: this.req.runId },
          "an upstream event follow failed: its streams end, clients resume",
        );
    }
    // The upstream ended: after the terminal event, or on an error. Subscribers get what came, then the end.
    this.flush();
    this.end(completed && this.coveredFrom === this.req.from ? this.finishedLog() : undefined);
  }

  private deliver(event: FollowedEvent): void {
    deliverEvent(
      event,
      () => this.receive(event.offset, eventFrame(event.offset, this.req.toJson(event))),
      this.subscribers.size,
    );
  }

  /**
   * The log from the feed's start to its end, when the upstream's first
   * message held all of it: its frames become the finished log, on the rule
   * of a completed feed (the recent frames still reach back to its start),
   * and go to no stream. A log too long for that is pushed as usual.
   */
  private wholeLog(): FinishedLog | undefined {
    const written = this.write();
    if (this.coveredFrom === this.req.from) return this.finishedLog();
    if (written) this.push(written);
    return undefined;
  }

  /** Every frame from the feed's start, after a keep-alive, in one Buffer: encoded once for all later streams of the run. */
  private finishedLog(): FinishedLog {
    const pieces: Buffer[] = [keepAliveBytes];
    const offsets: bigint[] = [];
    const starts: number[] = [];
    let at = keepAliveBytes.length;
    for (const frame of this.recent) {
      offsets.push(frame.offset);
      starts.push(at);
      pieces.push(frame.chunk.subarray(frame.start, frame.end));
      at += frame.end - frame.start;
    }
    return { from: this.req.from, bytes: Buffer.concat(pieces, at), offsets, starts };
  }

  private receive(offset: bigint, frame: string): void {
    this.last = offset;
    this.queue(frame, offset);
  }

  /** Keeps a written frame among the recent ones, dropping the oldest beyond recentBytes. */
  private remember(frame: WrittenFrame): void {
    this.recent.push(frame);
    this.recentBytes += frame.end - frame.start;
    while (this.recentBytes > this.options.recentBytes && this.recent.length > 1) {
      const dropped = this.recent.shift()!;
      this.recentBytes -= dropped.end - dropped.start;
      this.coveredFrom = dropped.offset + 1n;
    }
  }

  private queue(frame: string, offset?: bigint): void {
    this.pending.push(offset === undefined ? { frame } : { frame, offset });
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // Frames that arrive in the same turn, or within the write interval, go out together: one write per socket.
    const wait = this.lastFlush + writeIntervalMs(this.subscribers.size, this.options) - Date.now();
    if (wait > 0) setTimeout(() => this.flush(), wait);
    else setImmediate(() => this.flush());
  }

  private flush(): void {
    this.flushScheduled = false;
    const written = this.write();
    if (written) this.push(written);
  }

  /** The pending frames as one chunk, each event frame remembered among the recent ones; undefined when none are pending. */
  private write(): { chunk: Buffer; events: number } | undefined {
    if (this.pending.length === 0) return undefined;
    this.lastFlush = Date.now();
    const frames = this.pending;
    this.pending = [];
    const text = frames.map((f) => f.frame).join("");
    const chunk = Buffer.from(text);
    // Where each event frame sits in the chunk (an all-ASCII chunk has as many bytes as characters).
    const ascii = chunk.length === text.length;
    let at = 0;
    let events = 0;
    for (const { frame, offset } of frames) {
      const size = ascii ? frame.length : Buffer.byteLength(frame);
      if (offset !== undefined) {
        this.remember({ offset, chunk, start: at, end: at + size });
        events++;
      }
      at += size;
    }
    return { chunk, events };
  }

  /** A written chunk to every subscriber. */
  private push({ chunk, events }: { chunk: Buffer; events: number }): void {
    let reached = 0;
    for (const out of this.subscribers) {
      // A reader this far behind is let go rather than buffered for: it resumes from its Last-Event-ID.
      if (out.readableLength > this.options.maxBehindBytes) this.leave(out);
      else {
        out.push(chunk);
        reached++;
      }
    }
    if (events > 0 && reached > 0) eventsDelivered.inc(events * reached);
  }

  private end(finished?: FinishedLog): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd(finished);
    this.abort.abort(feedEnded);
    for (const out of this.subscribers) out.push(null);
    this.subscribers.clear();
    // Built only when it can matter: an Error's stack costs more than a feed's end.
    if (!this.started) this.settleReady(new Error("the feed ended before it started"));
  }
}
