import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import type { Bus } from "@loom/bus/bus";
import { createMemoryBus } from "@loom/bus/memory";
import { createNatsBus } from "@loom/bus/nats";
import { fieldViolationsOf } from "@loom/contracts/errors";
import { newId } from "@loom/contracts/ids";
import {
  type Event,
  EventsService,
  type FollowEventsRequestSchema,
  type FollowEventsResponse,
  type NewEvent,
  NewEventSchema,
  RunKind,
} from "@loom/proto/events/v1/events_pb";
import { headersFor, type Principal } from "@loom/server/principal";
import { type RunningServer, startRpcServer } from "@loom/server/rpc-server";
import { httpTransport } from "@loom/server/transports";
import { createLogger } from "@loom/telemetry/logger";
import { dropDatabase, freshDatabaseName, needs, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createEventsService, type EventsDeps } from "../src/service.ts";
import type { EventsStore, LogKind, NewEventRecord } from "../src/store/port.ts";
import { openEventsStore } from "../src/wiring.ts";

const serviceToken = "events-test-token-0123456789";
const logger = createLogger("test", "silent");
const alice: Principal = { userId: newId(), organizationId: newId() };
const mallory: Principal = { userId: newId(), organizationId: newId() };
const as = (principal: Principal) => ({ headers: headersFor(principal) });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Run = { runKind: RunKind; runId: string };
type FollowInit = MessageInitShape<typeof FollowEventsRequestSchema>;
const structureRun = (): Run => ({ runKind: RunKind.STRUCTURE_RUN, runId: newId() });
const assistantRun = (): Run => ({ runKind: RunKind.ASSISTANT_RUN, runId: newId() });
const logOf = (run: Run) => ({
  runKind: (run.runKind === RunKind.ASSISTANT_RUN ? "assistant-run" : "structure-run") as LogKind,
  runId: run.runId,
});

const newEvent = (type = "Thing", origin = "USER"): NewEvent =>
  create(NewEventSchema, { type, origin, timestamp: 1767225600.5 });
const batch = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => newEvent(`${prefix}-${i}`));
/** An event as a writer's record, for writing to a store behind the service's back (nothing is published). */
const record = (type: string, origin = "USER"): NewEventRecord => ({
  id: newId(),
  type,
  origin,
  payloadJson: "null",
  timestamp: 1767225600.5,
  createdAt: new Date(),
});

/** A service on its own HTTP server on port 0, as the gateway calls it. */
async function serve(deps: EventsDeps): Promise<{ server: RunningServer; client: Client<typeof EventsService> }> {
  const server = await startRpcServer({ services: [createEventsService({ logger, ...deps })], serviceToken, logger });
  return { server, client: createClient(EventsService, httpTransport(server.url, serviceToken)) };
}

interface Follower {
  received: FollowEventsResponse[];
  /** Resolves at the first message, or when the stream fails before one. */
  started: Promise<void>;
  /** How the stream finished: completed by the server, or its error. */
  done: Promise<{ error?: ConnectError }>;
  abort(): void;
  events(): Event[];
  offsets(): number[];
  keepAlives(): number;
}

function startFollow(client: Client<typeof EventsService>, req: FollowInit, who: Principal = alice): Follower {
  const controller = new AbortController();
  const received: FollowEventsResponse[] = [];
  let onStart!: () => void;
  const started = new Promise<void>((resolve) => (onStart = resolve));
  const done = (async () => {
    try {
      for await (const message of client.followEvents(req, { ...as(who), signal: controller.signal })) {
        received.push(message);
        onStart();
      }
      return {};
    } catch (error) {
      return { error: ConnectError.from(error) };
    } finally {
      onStart();
    }
  })();
  const events = () =>
    received.flatMap((m) =>
      m.kind.case === "event" ? [m.kind.value] : m.kind.case === "batch" ? m.kind.value.events : [],
    );
  return {
    received,
    started,
    done,
    abort: () => controller.abort(),
    events,
    offsets: () => events().map((e) => Number(e.offset)),
    keepAlives: () => received.filter((m) => m.kind.case === "keepAlive").length,
  };
}

/** The stream ends by itself within `ms`. */
async function endsWithin(follower: Follower, ms = 10_000): Promise<void> {
  const outcome = await Promise.race([follower.done, sleep(ms).then(() => "timeout" as const)]);
  if (outcome === "timeout") {
    follower.abort();
    throw new Error(`the stream did not end within ${ms} ms (got offsets ${follower.offsets().join(",")})`);
  }
  expect(outcome.error).toBeUndefined();
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

describe.each(storeKinds("follow events"))("follow events (%s store)", (kind) => {
  const db = freshDatabaseName();
  const bus = createMemoryBus();
  let store: EventsStore;
  let server: RunningServer;
  let client: Client<typeof EventsService>;
  const extra: RunningServer[] = [];

  beforeAll(async () => {
    store = await openEventsStore({ url: kind === "mongo" ? testServers.mongoUrl : undefined, db });
    await store.init();
    ({ server, client } = await serve({ store, bus }));
  });
  afterAll(async () => {
    for (const s of extra) await s.close();
    await server?.close();
    await bus.close();
    if (kind === "mongo") await dropDatabase(testServers.mongoUrl!, db);
  });

  const append = async (run: Run, events: NewEvent[], who = alice) =>
    (await client.appendEvents({ ...run, events }, as(who))).events;
  const listAll = async (run: Run) => {
    const all: Event[] = [];
    for (;;) {
      const page = await client.listEvents({ ...run, offset: BigInt(all.length), limit: 1000 }, as(alice));
      all.push(...page.events);
      if (page.events.length === 0 || BigInt(all.length) >= page.totalCount) return all;
    }
  };

  it("replays, then follows appends made concurrently, sending every offset once, in order, and ends after the terminal event", async () => {
    const run = structureRun();
    await append(run, [newEvent("Start")]);
    // Two writers, 100 events each in batches of 10; the follower starts half-way.
    let written = 0;
    let halfway!: () => void;
    const half = new Promise<void>((resolve) => (halfway = resolve));
    const writer = async (name: string) => {
      for (let i = 0; i < 10; i++) {
        await append(run, batch(10, `${name}${i}`));
        written += 10;
        if (written >= 100) halfway();
      }
    };
    const writers = Promise.all([writer("a"), writer("b")]);
    await half;
    const follower = startFollow(client, run);
    await writers;
    const [terminal] = await append(run, [newEvent("StructureRunCompleted")]);
    await endsWithin(follower);

    expect(follower.received[0]?.kind.case).toBe("keepAlive");
    expect(follower.offsets()).toEqual(range(0, 202));
    expect(follower.events().at(-1)).toEqual(terminal);
    // The same Event messages as the list.
    expect(follower.events()).toEqual(await listAll(run));
  });

  it("resumes from from_offset k with exactly k to the end, and ends after the stored terminal event", async () => {
    const run = structureRun();
    await append(run, batch(30, "e"));
    await append(run, [newEvent("StructureRunError")]);
    const all = await listAll(run);

    const whole = startFollow(client, run);
    await endsWithin(whole);
    expect(whole.received[0]?.kind.case).toBe("keepAlive");
    expect(whole.events()).toEqual(all);

    const resumed = startFollow(client, { ...run, fromOffset: 12n });
    await endsWithin(resumed);
    expect(resumed.offsets()).toEqual(range(12, 31));
    expect(resumed.events()).toEqual(all.slice(12));

    const last = startFollow(client, { ...run, fromOffset: 30n });
    await endsWithin(last);
    expect(last.offsets()).toEqual([30]);
  });

  it("ends after the first keep-alive when the terminal event is before from_offset", async () => {
    // Resuming right after the terminal event (what an EventSource does on its own when the stream ends).
    const assistant = assistantRun();
    await append(assistant, [
      newEvent("AssistantRunQueued", "SYSTEM"),
      newEvent("StartPromptEvent", "ASSISTANT"),
      newEvent("AssistantRunSucceeded", "SYSTEM"),
    ]);
    for (const fromOffset of [3n, 4n, 2n ** 62n]) {
      const after = startFollow(client, { ...assistant, fromOffset });
      await endsWithin(after);
      expect(after.received.map((m) => m.kind.case)).toEqual(["keepAlive"]);
    }
    // A structure run's log may go on after its end event; a stream still ends there.
    const structure = structureRun();
    await append(structure, [newEvent("A"), newEvent("StructureRunCompleted"), newEvent("Late"), newEvent("Later")]);
    const fromStart = startFollow(client, structure);
    await endsWithin(fromStart);
    expect(fromStart.events().map((e) => e.type)).toEqual(["A", "StructureRunCompleted"]);
    for (const fromOffset of [2n, 3n, 4n, 10n]) {
      const after = startFollow(client, { ...structure, fromOffset });
      await endsWithin(after);
      expect(after.received.map((m) => m.kind.case)).toEqual(["keepAlive"]);
    }
  });

  it("ends an assistant-run stream after the terminal SYSTEM lifecycle event only", async () => {
    const run = assistantRun();
    // An assistant run's empty log is followed: the runs service knows the run exists.
    const follower = startFollow(client, run);
    await follower.started;
    expect(follower.received.map((m) => m.kind.case)).toEqual(["keepAlive"]);
    await append(run, [newEvent("AssistantRunQueued", "SYSTEM"), newEvent("AssistantRunSucceeded", "ASSISTANT")]);
    await append(run, [newEvent("AssistantRunCancelled", "SYSTEM")]);
    await endsWithin(follower);
    expect(follower.events().map((e) => e.type)).toEqual([
      "AssistantRunQueued",
      "AssistantRunSucceeded",
      "AssistantRunCancelled",
    ]);
  });

  it("sends keep-alives during silence, and events between them", async () => {
    const run = structureRun();
    await append(run, [newEvent("First")]);
    const follower = startFollow(client, { ...run, keepAliveInterval: durationFromMs(50) });
    await follower.started;
    await vi.waitFor(() => expect(follower.keepAlives()).toBeGreaterThanOrEqual(4), { timeout: 5_000, interval: 10 });
    await append(run, [newEvent("Second")]);
    await vi.waitFor(() => expect(follower.offsets()).toEqual([0, 1]), { timeout: 5_000, interval: 10 });
    const during = follower.keepAlives();
    await vi.waitFor(() => expect(follower.keepAlives()).toBeGreaterThan(during), { timeout: 5_000, interval: 10 });
    await append(run, [newEvent("StructureRunCompleted")]);
    await endsWithin(follower);
    expect(follower.offsets()).toEqual([0, 1, 2]);
    expect(follower.received[0]?.kind.case).toBe("keepAlive");
    expect(follower.received[1]?.kind.case).toBe("event");
  });

  it("does not hold keep-alives back while the store is slow to answer a silence's catch-up read", async () => {
    const subscribers = bus.subscriberCount();
    const run = structureRun();
    await append(run, [newEvent("First")]);
    // The same store, every read after the follow's first one taking 2 s (a database under load).
    let reads = 0;
    const slow: EventsStore = {
      ...store,
      list: async (...args) => (++reads > 2 && (await sleep(2_000)), store.list(...args)),
    };
    const slowServed = await serve({ store: slow, bus });
    extra.push(slowServed.server);
    const follower = startFollow(slowServed.client, { ...run, keepAliveInterval: durationFromMs(50) });
    await follower.started;
    // Before, each keep-alive waited for the read before it: 4 keep-alives took 8 s.
    await vi.waitFor(() => expect(follower.keepAlives()).toBeGreaterThanOrEqual(5), { timeout: 1_500, interval: 10 });
    follower.abort();
    await follower.done;
    await vi.waitFor(() => expect(bus.subscriberCount()).toBe(subscribers), { timeout: 5_000, interval: 10 });
  });

  it("answers NOT_FOUND before any message for another organization's log and an unknown structure run", async () => {
    const base = bus.subscriberCount();
    const run = structureRun();
    await append(run, [newEvent()]);
    const assistant = assistantRun();
    await append(assistant, [newEvent("AssistantRunQueued", "SYSTEM")]);
    for (const [req, who] of [
      [run, mallory],
      [assistant, mallory],
      [structureRun(), alice],
    ] as const) {
      const follower = startFollow(client, req, who);
      const { error } = await follower.done;
      expect(error?.code).toBe(Code.NotFound);
      expect(follower.received).toEqual([]);
    }
    expect(bus.subscriberCount()).toBe(base);
  });

  it("rejects bad requests before any message", async () => {
    const failure = async (req: FollowInit, who?: Principal) => {
      const follower = startFollow(client, { ...structureRun(), ...req }, who);
      const { error } = await follower.done;
      expect(follower.received).toEqual([]);
      return error!;
    };
    const paths = async (req: FollowInit) => {
      const error = await failure(req);
      expect(error.code).toBe(Code.InvalidArgument);
      return fieldViolationsOf(error).map((v) => v.path);
    };
    expect(await paths({ fromOffset: -1n })).toEqual(["query.offset"]);
    expect(await paths({ keepAliveInterval: durationFromMs(1) })).toEqual(["keep_alive_interval"]);
    expect(await paths({ runId: "nope" })).toEqual(["path.structure_run_id"]);
    expect(await paths({ runKind: RunKind.UNSPECIFIED })).toEqual(["run_kind"]);
    // No principal headers at all.
    const noPrincipal = await (async () => {
      try {
        for await (const _ of client.followEvents(structureRun())) return undefined;
      } catch (error) {
        return ConnectError.from(error);
      }
    })();
    expect(noPrincipal?.code).toBe(Code.Unauthenticated);
  });

  it("fills a gap from the store when a live event overtakes one the bus never delivered", async () => {
    const run = structureRun();
    await append(run, [newEvent("Zero")]);
    // Keep-alives far apart: what arrives promptly was not found by the silence check.
    const follower = startFollow(client, { ...run, keepAliveInterval: durationFromMs(60_000) });
    await follower.started;
    await store.append(logOf(run), alice.organizationId, [record("Unpublished")]);
    await append(run, [newEvent("Published")]);
    await expect.poll(() => follower.offsets(), { timeout: 3_000 }).toEqual([0, 1, 2]);
    expect(follower.events().map((e) => e.type)).toEqual(["Zero", "Unpublished", "Published"]);
    follower.abort();
  });

  it("finds events the bus lost, the terminal one included, at the next keep-alive", async () => {
    const run = assistantRun();
    await append(run, [newEvent("AssistantRunQueued", "SYSTEM")]);
    const follower = startFollow(client, { ...run, keepAliveInterval: durationFromMs(100) });
    await follower.started;
    await store.append(logOf(run), alice.organizationId, [record("StartPromptEvent", "ASSISTANT")]);
    await store.append(logOf(run), alice.organizationId, [record("AssistantRunErrored", "SYSTEM")], true);
    await endsWithin(follower, 5_000);
    expect(follower.events().map((e) => e.type)).toEqual([
      "AssistantRunQueued",
      "StartPromptEvent",
      "AssistantRunErrored",
    ]);
  });

  it("skips a hole that the store still has after the grace, live and in a replay, and never stalls", async () => {
    // A failed batch leaves its offsets unused: here the store hides "Hole" events, which were never published.
    const hiding: EventsStore = {
      ...store,
      close: async () => {},
      list: async (...args) => {
        const window = await store.list(...args);
        return window && { ...window, items: window.items.filter((e) => e.type !== "Hole") };
      },
    };
    const holeBus = createMemoryBus();
    const { server: holeServer, client: holeClient } = await serve({
      store: hiding,
      bus: holeBus,
      follow: { holeGraceMs: 300 },
    });
    extra.push(holeServer);
    const run = structureRun();
    const appendHere = (events: NewEvent[]) => holeClient.appendEvents({ ...run, events }, as(alice));
    await appendHere(batch(2, "before"));
    const live = startFollow(holeClient, run);
    await live.started;
    await store.append(logOf(run), alice.organizationId, [record("Hole"), record("Hole")]);
    await appendHere(batch(2, "after"));
    await expect.poll(() => live.offsets(), { timeout: 5_000 }).toEqual([0, 1, 4, 5]);
    await appendHere([newEvent("StructureRunCompleted")]);
    await endsWithin(live);
    expect(live.offsets()).toEqual([0, 1, 4, 5, 6]);

    const started = Date.now();
    const replay = startFollow(holeClient, run);
    await endsWithin(replay);
    expect(replay.offsets()).toEqual([0, 1, 4, 5, 6]);
    // The events after this hole are older than the grace: the replay does not wait it out again.
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(holeBus.subscriberCount()).toBe(0);
  });

  it("leaves live events beyond its buffer to the store, and still sends each once, in order", async () => {
    const smallBus = createMemoryBus();
    const { server: small, client: smallClient } = await serve({
      store: { ...store, close: async () => {} },
      bus: smallBus,
      follow: { maxBuffered: 1 },
    });
    extra.push(small);
    const run = structureRun();
    await smallClient.appendEvents({ ...run, events: [newEvent("Zero")] }, as(alice));
    const follower = startFollow(smallClient, { ...run, keepAliveInterval: durationFromMs(60_000) });
    await follower.started;
    await smallClient.appendEvents({ ...run, events: batch(40, "burst") }, as(alice));
    await smallClient.appendEvents({ ...run, events: [newEvent("StructureRunCompleted")] }, as(alice));
    await endsWithin(follower, 5_000);
    expect(follower.offsets()).toEqual(range(0, 42));
  });

  it("with batches, sends the log's events as the first message and live ones together, `last` on the terminal one", async () => {
    const run = structureRun();
    await append(run, batch(30, "e"));
    await append(run, [newEvent("StructureRunCompleted")]);
    const replay = startFollow(client, { ...run, batches: true });
    await endsWithin(replay);
    // One message: the first read's events, ending the stream.
    expect(replay.received.map((m) => m.kind.case)).toEqual(["batch"]);
    expect(replay.received[0]?.kind.value).toMatchObject({ last: true });
    expect(replay.events()).toEqual(await listAll(run));

    const live = structureRun();
    await append(live, [newEvent("Start")]);
    const follower = startFollow(client, { ...live, batches: true });
    await follower.started;
    expect(follower.offsets()).toEqual([0]);
    await append(live, batch(5, "live"));
    await append(live, [newEvent("StructureRunError")]);
    await endsWithin(follower);
    expect(follower.events()).toEqual(await listAll(live));
    const batches = follower.received
      .filter((m) => m.kind.case === "batch")
      .map((m) => m.kind.value as { last: boolean });
    expect(batches.map((b) => b.last)).toEqual([...batches.slice(1).map(() => false), true]);
  });

  it("answers a follow of an assistant-run log closed here from memory, with what the store holds", async () => {
    const run = assistantRun();
    const prompt = JSON.stringify({ prompt: "héllo", list: [1, 2.5, null] });
    await append(run, [newEvent("AssistantRunQueued", "SYSTEM")]);
    await append(run, [create(NewEventSchema, { type: "StartPromptEvent", origin: "ASSISTANT", payloadJson: prompt })]);
    await append(run, [newEvent("AssistantRunSucceeded", "SYSTEM")]);
    const stored = await listAll(run);
    const list = vi.spyOn(store, "list");
    const subscribers = bus.subscriberCount();
    try {
      // As the gateway asks: one batch, the payload as its writer sent it.
      const gateway = startFollow(client, { ...run, batches: true, acceptsPayloadJson: true });
      await endsWithin(gateway);
      expect(gateway.received.map((m) => m.kind.case)).toEqual(["batch"]);
      expect(gateway.events().map((e) => e.payloadJson)).toEqual(["", prompt, ""]);
      expect(gateway.events().map(({ payload, payloadJson, ...e }) => e)).toEqual(
        stored.map(({ payload, payloadJson, ...e }) => e),
      );
      // As an older caller asks: a keep-alive, then one event a message, every payload a Value.
      const older = startFollow(client, run);
      await endsWithin(older);
      expect(older.received.map((m) => m.kind.case)).toEqual(["keepAlive", "event", "event", "event"]);
      expect(older.events()).toEqual(stored);
      // From further in, and past the end.
      const resumed = startFollow(client, { ...run, fromOffset: 1n, batches: true });
      await endsWithin(resumed);
      expect(resumed.events()).toEqual(stored.slice(1));
      const after = startFollow(client, { ...run, fromOffset: 3n, batches: true });
      await endsWithin(after);
      expect(after.received.map((m) => m.kind.case)).toEqual(["keepAlive"]);
      // Neither the store nor the bus was needed.
      expect(list).not.toHaveBeenCalled();
      expect(bus.subscriberCount()).toBe(subscribers);
      // Another organization is still told the log is not there.
      expect((await startFollow(client, run, mallory).done).error?.code).toBe(Code.NotFound);
    } finally {
      list.mockRestore();
    }
    // A replica that did not write the log reads the store and sends the same.
    const { server: other, client: otherClient } = await serve({ store, bus });
    extra.push(other);
    const elsewhere = startFollow(otherClient, { ...run, batches: true, acceptsPayloadJson: true });
    await endsWithin(elsewhere);
    expect(elsewhere.events()).toEqual(stored);
  });

  it("leaves no subscription behind when streams end, fail or are cancelled", async () => {
    const base = bus.subscriberCount();
    const run = structureRun();
    await append(run, [newEvent("StructureRunCompleted")]);
    await endsWithin(startFollow(client, run));
    await startFollow(client, structureRun()).done;
    const open = startFollow(client, assistantRun());
    await open.started;
    expect(bus.subscriberCount()).toBe(base + 1);
    open.abort();
    expect((await open.done).error?.code).toBe(Code.Canceled);
    await expect.poll(() => bus.subscriberCount()).toBe(base);
  });
});

describe("follow events: 1,000 cancelled follows", () => {
  let server: RunningServer;
  let client: Client<typeof EventsService>;
  const bus = createMemoryBus();

  beforeAll(async () => {
    const store = await openEventsStore({ db: "unused" });
    await store.init();
    ({ server, client } = await serve({ store, bus }));
  });
  afterAll(async () => {
    await server?.close();
    await bus.close();
  });

  it("releases every bus subscription and timer when callers go away", async () => {
    const base = bus.subscriberCount();
    const structure = structureRun();
    await client.appendEvents({ ...structure, events: batch(5, "e") }, as(alice));
    const followers = Array.from({ length: 1000 }, (_, i) =>
      startFollow(client, i % 2 ? structure : assistantRun(), { ...alice }),
    );
    await Promise.all(followers.map((f) => f.started));
    expect(followers.every((f) => f.received[0]?.kind.case === "keepAlive")).toBe(true);
    expect(bus.subscriberCount()).toBe(base + 1000);
    followers.forEach((f) => f.abort());
    const outcomes = await Promise.all(followers.map((f) => f.done));
    expect(outcomes.every((o) => o.error?.code === Code.Canceled)).toBe(true);
    await expect.poll(() => bus.subscriberCount(), { timeout: 5_000 }).toBe(base);
  }, 60_000);
});

describe.skipIf(!needs("NATS_URL", "follow events across two replicas over NATS"))(
  "follow events across two replicas",
  () => {
    const kind = testServers.mongoUrl ? "mongo" : "sqlite";
    const db = freshDatabaseName();
    const buses: Bus[] = [];
    const servers: RunningServer[] = [];
    const stores: EventsStore[] = [];
    let a: Client<typeof EventsService>;
    let b: Client<typeof EventsService>;

    beforeAll(async () => {
      if (kind === "sqlite")
        console.warn(
          "follow events across two replicas: MONGODB_URL is not set, the replicas share one in-memory SQLite store",
        );
      for (const name of ["a", "b"]) {
        // Without MongoDB the replicas share one in-memory database; on MongoDB each replica has its own connection.
        const store =
          stores[0] && kind === "sqlite" ? stores[0] : await openEventsStore({ url: testServers.mongoUrl, db });
        await store.init();
        stores.push(store);
        const bus = await createNatsBus(testServers.natsUrl!, `events-test-${name}`);
        buses.push(bus);
        const replica = await serve({ store, bus });
        servers.push(replica.server);
        if (name === "a") a = replica.client;
        else b = replica.client;
      }
    });
    afterAll(async () => {
      for (const s of servers) await s.close();
      for (const bus of buses) await bus.close();
      if (kind === "mongo") await dropDatabase(testServers.mongoUrl!, db);
    });

    it("a follower on replica A gets the events appended through replica B (and A), each once, in order", async () => {
      const run = structureRun();
      await b.appendEvents({ ...run, events: batch(5, "early") }, as(alice));
      const follower = startFollow(a, run);
      await follower.started;
      const writer = async (client: Client<typeof EventsService>, name: string) => {
        for (let i = 0; i < 8; i++) await client.appendEvents({ ...run, events: batch(5, `${name}${i}`) }, as(alice));
      };
      await Promise.all([writer(b, "b"), writer(a, "a"), writer(b, "bb")]);
      await b.appendEvents({ ...run, events: [newEvent("StructureRunCompleted")] }, as(alice));
      await endsWithin(follower);
      expect(follower.offsets()).toEqual(range(0, 126));
      const listed = await a.listEvents({ ...run, limit: 1000 }, as(alice));
      expect(follower.events()).toEqual(listed.events);

      const resumed = startFollow(b, { ...run, fromOffset: 100n });
      await endsWithin(resumed);
      expect(resumed.offsets()).toEqual(range(100, 126));
    });

    it("a follower on replica A sees a live append through replica B promptly", async () => {
      const run = assistantRun();
      const follower = startFollow(a, { ...run, keepAliveInterval: durationFromMs(60_000) });
      await follower.started;
      await b.appendEvents({ ...run, events: [newEvent("AssistantRunQueued", "SYSTEM")] }, as(alice));
      await expect.poll(() => follower.offsets(), { timeout: 3_000 }).toEqual([0]);
      await b.appendEvents({ ...run, events: [newEvent("AssistantRunCancelled", "SYSTEM")] }, as(alice));
      await endsWithin(follower, 3_000);
      expect(follower.offsets()).toEqual([0, 1]);
    });
  },
);
