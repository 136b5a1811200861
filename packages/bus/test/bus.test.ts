import { needs, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type Bus, subjectMatches } from "../src/bus.ts";
import { createMemoryBus } from "../src/memory.ts";
import { createNatsBus } from "../src/nats.ts";

describe("subject wildcards", () => {
  it.each([
    ["loom.events.*.r1", "loom.events.assistant.r1", true],
    ["loom.events.*.r1", "loom.events.assistant.r2", false],
    ["loom.events.>", "loom.events.assistant.r1", true],
    ["loom.events.>", "loom.events", false],
    ["loom.runs.r1.control", "loom.runs.r1.control", true],
    ["loom.runs.r1", "loom.runs.r1.control", false],
  ])("%s matches %s: %s", (pattern, subject, expected) => {
    expect(subjectMatches(pattern, subject)).toBe(expected);
  });
});

/**
 * The contract every bus keeps, between a publisher and a subscriber that are
 * what the deployment makes them: in memory, two users of the one in-process
 * bus (the embedded process); on NATS, two connections (two replicas).
 */
const kinds: Array<["memory" | "nats", () => Promise<{ publisher: Bus; subscriber: Bus; close(): Promise<void> }>]> = [
  [
    "memory",
    async () => {
      const bus = createMemoryBus();
      return { publisher: bus, subscriber: bus, close: () => bus.close() };
    },
  ],
];
if (needs("NATS_URL", "bus contract on NATS")) {
  kinds.push([
    "nats",
    async () => {
      const publisher = await createNatsBus(testServers.natsUrl!, "bus-test-publisher");
      const subscriber = await createNatsBus(testServers.natsUrl!, "bus-test-subscriber");
      return { publisher, subscriber, close: async () => (await publisher.close(), await subscriber.close()) };
    },
  ]);
}

describe.each(kinds)("bus contract (%s)", (_kind, open) => {
  let a: Bus;
  let b: Bus;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ publisher: a, subscriber: b, close } = await open());
  });
  afterAll(() => close());

  const collect = (bus: Bus, subject: string) => {
    const got: string[] = [];
    const sub = bus.subscribe(subject, (data, on) => got.push(`${on}:${new TextDecoder().decode(data)}`));
    return { got, sub };
  };
  /**
   * Waits until a marker published last has arrived: a bus delivers one
   * publisher's messages to one subscriber in order, so whatever was
   * published before it has arrived by then too, and a check that something
   * did not arrive is not a guess about timing.
   */
  async function flushed() {
    const subject = `loom.test.marker.${Math.random().toString(16).slice(2)}`;
    const marker = collect(b, subject);
    await b.ready(); // the marker's subscription is registered with the server
    await a.publish(subject, new TextEncoder().encode("marker"));
    await vi.waitFor(() => expect(marker.got).toHaveLength(1), { timeout: 5_000, interval: 5 });
    marker.sub.unsubscribe();
  }

  it("delivers what one side publishes to matching subscribers on the other, in order", async () => {
    const run = `r${Math.random().toString(16).slice(2)}`;
    const exact = collect(b, `loom.events.assistant.${run}`);
    const wild = collect(b, `loom.events.*.${run}`);
    const other = collect(b, "loom.events.assistant.other");
    await b.ready(); // subscriptions are registered with the server
    for (const n of [1, 2, 3]) await a.publish(`loom.events.assistant.${run}`, new TextEncoder().encode(String(n)));
    await vi.waitFor(() => expect(exact.got).toEqual([1, 2, 3].map((n) => `loom.events.assistant.${run}:${n}`)), {
      timeout: 5_000,
      interval: 5,
    });
    await vi.waitFor(() => expect(wild.got).toHaveLength(3), { timeout: 5_000, interval: 5 });
    await a.publish("loom.events.assistant.elsewhere", new Uint8Array([1]));
    await flushed();
    expect(other.got).toEqual([]);
    [exact, wild, other].forEach((c) => c.sub.unsubscribe());
  });

  it("encodes a message given as a function once, for every subscriber", async () => {
    const subject = `loom.events.assistant.lazy${Math.random().toString(16).slice(2)}`;
    const [one, two] = [collect(b, subject), collect(b, `loom.events.*.${subject.split(".")[3]}`)];
    await b.ready();
    const encode = vi.fn(() => new TextEncoder().encode("lazy"));
    await a.publish(subject, encode);
    await flushed();
    expect([one.got, two.got]).toEqual([[`${subject}:lazy`], [`${subject}:lazy`]]);
    expect(encode).toHaveBeenCalledTimes(1);
    [one, two].forEach((c) => c.sub.unsubscribe());
  });

  it("stops delivering after unsubscribe", async () => {
    const c = collect(b, "loom.runs.x.control");
    await b.ready();
    c.sub.unsubscribe();
    await b.ready();
    await a.publish("loom.runs.x.control", new Uint8Array([1]));
    await flushed();
    expect(c.got).toEqual([]);
  });

  it("reports ready while connected", async () => {
    expect(await a.ready()).toBe(true);
    expect(await b.ready()).toBe(true);
  });
});

describe("the in-process bus", () => {
  it("does not encode a message that no subscription matches", async () => {
    const bus = createMemoryBus();
    bus.subscribe("loom.events.assistant.someone-else", () => {});
    const encode = vi.fn(() => new Uint8Array([1]));
    await bus.publish("loom.events.assistant.r1", encode);
    expect(encode).not.toHaveBeenCalled();
    await bus.close();
  });
});
