import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { needs, testServers } from "@loom/testing/servers";
import { subjectMatches, type Bus } from "../src/bus.ts";
import { createMemoryBus } from "../src/bus-memory.ts";
import { createNatsBus } from "../src/bus-nats.ts";

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

const kinds: Array<["memory" | "nats", () => Promise<Bus>]> = [["memory", async () => createMemoryBus()]];
if (needs("NATS_URL", "bus contract on NATS")) kinds.push(["nats", () => createNatsBus(testServers.natsUrl!, "bus-test")]);

describe.each(kinds)("bus contract (%s)", (_kind, open) => {
  let a: Bus;
  let b: Bus;
  beforeAll(async () => {
    a = await open();
    // On NATS a second connection stands for a second replica; in memory there is one process.
    b = _kind === "nats" ? await open() : a;
  });
  afterAll(async () => {
    await a.close();
    if (b !== a) await b.close();
  });

  const collect = (bus: Bus, subject: string) => {
    const got: string[] = [];
    const sub = bus.subscribe(subject, (data, on) => got.push(`${on}:${new TextDecoder().decode(data)}`));
    return { got, sub };
  };
  const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

  it("delivers what one side publishes to matching subscribers on the other, in order", async () => {
    const run = `r${Math.random().toString(16).slice(2)}`;
    const exact = collect(b, `loom.events.assistant.${run}`);
    const wild = collect(b, `loom.events.*.${run}`);
    const other = collect(b, "loom.events.assistant.other");
    if ("ready" in b) await b.ready(); // subscriptions are registered with the server
    for (const n of [1, 2, 3]) await a.publish(`loom.events.assistant.${run}`, new TextEncoder().encode(String(n)));
    await settle();
    expect(exact.got).toEqual([1, 2, 3].map((n) => `loom.events.assistant.${run}:${n}`));
    expect(wild.got).toHaveLength(3);
    expect(other.got).toEqual([]);
    [exact, wild, other].forEach((c) => c.sub.unsubscribe());
  });

  it("stops delivering after unsubscribe", async () => {
    const c = collect(b, "loom.runs.x.control");
    await b.ready();
    c.sub.unsubscribe();
    await b.ready();
    await a.publish("loom.runs.x.control", new Uint8Array([1]));
    await settle();
    expect(c.got).toEqual([]);
  });

  it("reports ready while connected", async () => {
    expect(await a.ready()).toBe(true);
  });
});
