import { Code } from "@connectrpc/connect";
import { newId } from "@loom/contracts/ids";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AppendedEvent,
  type EventsStore,
  InvalidPayloadJson,
  type LogKind,
  type LogRef,
  type NewEventRecord,
  type SpanRecord,
} from "../src/store/port.ts";
import { openEventsStore } from "../src/wiring.ts";

describe.each(storeKinds("events store contract"))("events store contract (%s)", (kind) => {
  let store: EventsStore;
  /** A second replica on the same database (on SQLite there is one process, so the same store). */
  let replica: EventsStore;
  const db = freshDatabaseName();
  const org = newId();
  const otherOrg = newId();

  beforeAll(async () => {
    store = await openEventsStore({ url: kind === "mongo" ? testServers.mongoUrl : undefined, db });
    await store.init();
    await store.init();
    replica = kind === "mongo" ? await openEventsStore({ url: testServers.mongoUrl, db }) : store;
  });
  afterAll(async () => {
    await store.close();
    if (replica !== store) await replica.close();
    if (kind === "mongo") await dropDatabase(testServers.mongoUrl!, db);
  });

  const newLog = (runKind: LogKind = "structure-run"): LogRef => ({ runKind, runId: newId() });
  const event = (over: Partial<NewEventRecord> = {}): NewEventRecord => ({
    id: newId(),
    type: "Thing",
    origin: "USER",
    payloadJson: "null",
    timestamp: 1767225600.125,
    createdAt: new Date("2026-03-04T05:06:07.089Z"),
    ...over,
  });
  const batch = (n: number, type = "Thing") => Array.from({ length: n }, (_, i) => event({ type: `${type}-${i}` }));
  const offsets = (events: AppendedEvent[] | undefined) => events?.map((e) => e.offset);

  it("stores a batch at consecutive offsets after the ones before, and round-trips every field", async () => {
    const log = newLog("assistant-run");
    const payload = {
      text: "hé",
      n: -1.5,
      list: [1, "two", null, true, { deep: [] }],
      $set: 1,
      "a.b": { "": "empty key" },
    };
    const payloads = [payload, "just a string", 0];
    const first = [
      event({ type: "StartPromptEvent", origin: "ASSISTANT", payloadJson: JSON.stringify(payload, null, 2) }),
      event({ payloadJson: '"just a string"' }),
      event({ payloadJson: " 0 " }),
    ];
    const stored = await store.append(log, org, first);
    const records = first.map(({ payloadJson: _, ...e }, i) => ({ ...e, ...log, organizationId: org, offset: i }));
    expect(stored).toEqual(records);
    expect(offsets(await store.append(log, org, batch(2)))).toEqual([3, 4]);
    const window = await store.list(log, org, 0, 10);
    expect(window?.totalCount).toBe(5);
    expect(window?.items.slice(0, 3)).toEqual(records.map((e, i) => ({ ...e, payload: payloads[i] })));
    expect(offsets(window?.items)).toEqual([0, 1, 2, 3, 4]);
  });

  it("refuses a batch with a payload that is not JSON text, naming the event, and writes none of it", async () => {
    const log = newLog();
    await store.append(log, org, batch(1, "open"));
    for (const text of ["{", "", "{'a': 1}", "NaN", '{"a": 1} trailing']) {
      const refused = await store.append(log, org, [event(), event({ payloadJson: text })]).catch((e: unknown) => e);
      expect(refused, text).toBeInstanceOf(InvalidPayloadJson);
      expect((refused as InvalidPayloadJson).index).toBe(1);
    }
    // A large batch too, the bad payload well past its first hundred events.
    const large = Array.from({ length: 250 }, (_, i) => event(i === 230 ? { payloadJson: "{" } : {}));
    const refused = await store.append(log, org, large).catch((e: unknown) => e);
    expect((refused as InvalidPayloadJson).index).toBe(230);
    expect(offsets(await store.append(log, org, batch(1, "after")))).toEqual([1]);
    expect((await store.list(log, org, 0, 10))?.items.map((e) => e.type)).toEqual(["open-0", "after-0"]);
  });

  it("stores a batch of a thousand events whole, in order, each found by id", async () => {
    const log = newLog();
    const large = batch(1000, "big");
    expect(offsets(await store.append(log, org, large))).toEqual(large.map((_, i) => i));
    const window = await store.list(log, org, 995, 10);
    expect(window?.totalCount).toBe(1000);
    expect(window?.items.map((e) => e.type)).toEqual(["big-995", "big-996", "big-997", "big-998", "big-999"]);
    expect((await store.get(org, large[777]!.id))?.offset).toBe(777);
  });

  it("gives concurrent appends to one log, from two replicas, offsets 0..N-1 with no gap and no duplicate, each batch in one run", async () => {
    const log = newLog();
    const sizes = Array.from({ length: 20 }, (_, i) => (i % 5) + 1);
    const results = await Promise.all(
      sizes.map((n, i) => (i % 2 ? replica : store).append(log, org, batch(n, `batch${i}`))),
    );
    const total = sizes.reduce((a, b) => a + b, 0);
    results.forEach((stored, i) => {
      expect(stored).toHaveLength(sizes[i]!);
      const first = stored![0]!.offset;
      expect(offsets(stored)).toEqual(stored!.map((_, j) => first + j));
      expect(stored!.map((e) => e.type)).toEqual(stored!.map((_, j) => `batch${i}-${j}`));
    });
    const all = results.flatMap((stored) => offsets(stored)!).sort((a, b) => a - b);
    expect(all).toEqual(Array.from({ length: total }, (_, i) => i));
    const window = await store.list(log, org, 0, 1000);
    expect(window?.totalCount).toBe(total);
    expect(offsets(window?.items)).toEqual(all);
  });

  it("stores concurrent appends from one process in the order they were made, a refused one holding up none", async () => {
    const log = newLog();
    await store.append(log, org, batch(1, "open"));
    const appends = Array.from({ length: 30 }, (_, i) =>
      i === 10 ? store.append(log, otherOrg, batch(2, "foreign")) : store.append(log, org, batch(2, `batch${i}`)),
    );
    const results = await Promise.all(appends);
    expect(results[10]).toBeUndefined();
    const firsts = results.flatMap((stored) => (stored ? [stored[0]!.offset] : []));
    expect(firsts).toEqual(Array.from({ length: 29 }, (_, i) => 1 + 2 * i));
  });

  it("stores appends made together up to the one that closes the log, and refuses the ones made after it", async () => {
    const log = newLog("assistant-run");
    await store.append(log, org, batch(1, "open"));
    const appends = ["a", "b", "closing", "c", "d"].map((name) =>
      store.append(log, org, batch(2, name), name === "closing").catch((error: Error) => error),
    );
    const [a, b, closing, c, d] = await Promise.all(appends);
    expect([a, b, closing].map((stored) => offsets(stored as AppendedEvent[]))).toEqual([
      [1, 2],
      [3, 4],
      [5, 6],
    ]);
    for (const refused of [c, d]) expect(refused).toMatchObject({ code: Code.FailedPrecondition });
    expect((await store.list(log, org, 0, 100))?.totalCount).toBe(7);
  });

  it("refuses every append after a closing batch, and keeps what was stored", async () => {
    const log = newLog("assistant-run");
    await store.append(log, org, batch(2));
    expect(
      offsets(await store.append(log, org, [event({ type: "AssistantRunCancelled", origin: "SYSTEM" })], true)),
    ).toEqual([2]);
    await expect(store.append(log, org, batch(1))).rejects.toMatchObject({ code: 9 }); // FAILED_PRECONDITION
    await expect(replica.append(log, org, batch(1), true)).rejects.toMatchObject({ code: 9 });
    expect((await store.list(log, org, 0, 10))?.totalCount).toBe(3);
  });

  it("keeps one chain when replicas take turns on a log, and refuses a replica's append after the other closed it", async () => {
    const log = newLog("assistant-run");
    // Each replica's last view of the log's end is stale on its next turn.
    for (let turn = 0; turn < 6; turn++) {
      expect(offsets(await (turn % 2 ? replica : store).append(log, org, batch(2)))).toEqual([2 * turn, 2 * turn + 1]);
    }
    await replica.append(log, org, [event({ type: "AssistantRunSucceeded", origin: "SYSTEM" })], true);
    await expect(store.append(log, org, batch(1))).rejects.toMatchObject({ code: 9 }); // FAILED_PRECONDITION
    expect((await store.list(log, org, 0, 100))?.totalCount).toBe(13);
  });

  it("when a closing append races others, nothing lands after the closing batch", async () => {
    const log = newLog("assistant-run");
    await store.append(log, org, batch(1));
    const racers = Array.from({ length: 10 }, (_, i) =>
      (i % 2 ? replica : store).append(log, org, batch(1, `r${i}`), i === 4).catch(() => "refused"),
    );
    await Promise.all(racers);
    const { items } = (await store.list(log, org, 0, 100))!;
    expect(items.at(-1)!.type).toBe("r4-0");
  });

  it("binds a log to the organization of its first append; for others it does not exist", async () => {
    const log = newLog();
    const mine = await store.append(log, org, batch(2));
    expect(await store.append(log, otherOrg, batch(1))).toBeUndefined();
    expect(await store.list(log, otherOrg, 0, 10)).toBeUndefined();
    expect(await store.get(otherOrg, mine![0]!.id)).toBeUndefined();
    expect(await store.list(log, org, 0, 10)).toMatchObject({ totalCount: 2 });
    // The same run id in the other kind is another log.
    expect(offsets(await store.append({ ...log, runKind: "assistant-run" }, otherOrg, batch(1)))).toEqual([0]);
  });

  it("lets exactly one organization win concurrent first appends", async () => {
    const log = newLog();
    const orgs = Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? org : otherOrg));
    const results = await Promise.all(orgs.map((o, i) => (i % 3 ? store : replica).append(log, o, batch(1))));
    const winners = new Set(orgs.filter((_, i) => results[i] !== undefined));
    expect(winners.size).toBe(1);
    const winner = [...winners][0]!;
    expect(results.filter(Boolean)).toHaveLength(5);
    expect((await store.list(log, winner, 0, 100))?.totalCount).toBe(5);
  });

  it("lists a window of the log by offset and limit, with the log's length", async () => {
    const log = newLog();
    await store.append(log, org, batch(4, "a"));
    await store.append(log, org, batch(3, "b"));
    const page = async (offset: number, limit: number) => {
      const window = await store.list(log, org, offset, limit);
      return { offsets: offsets(window?.items), totalCount: window?.totalCount };
    };
    expect(await page(0, 3)).toEqual({ offsets: [0, 1, 2], totalCount: 7 });
    expect(await page(3, 3)).toEqual({ offsets: [3, 4, 5], totalCount: 7 });
    expect(await page(6, 3)).toEqual({ offsets: [6], totalCount: 7 });
    expect(await page(7, 3)).toEqual({ offsets: [], totalCount: 7 });
    expect(await page(1_000_000, 1000)).toEqual({ offsets: [], totalCount: 7 });
    expect((await store.list(log, org, 2, 3))?.items.map((e) => e.type)).toEqual(["a-2", "a-3", "b-0"]);
    expect(await store.list(newLog(), org, 0, 10)).toEqual({ items: [], totalCount: 0 });
  });

  it("gets structure-run events of the organization only", async () => {
    const [structureEvent] = (await store.append(newLog("structure-run"), org, batch(1)))!;
    const [assistantEvent] = (await store.append(newLog("assistant-run"), org, batch(1)))!;
    expect(await store.get(org, structureEvent!.id)).toEqual({ ...structureEvent, payload: null });
    expect(await store.get(otherOrg, structureEvent!.id)).toBeUndefined();
    expect(await store.get(org, assistantEvent!.id)).toBeUndefined();
    expect(await store.get(org, newId())).toBeUndefined();
  });

  const span = (name: string, over: Partial<SpanRecord> = {}): SpanRecord => ({
    spanId: newId(),
    traceId: "00000000-0000-0000-8c2d-2b0e43c0a1f7",
    name,
    startTime: "2026-11-27T04:50:00.123456+00:00",
    endTime: "2026-11-27T04:50:01.654321+00:00",
    status: "OK",
    attributes: { "func.name": name, $set: 1, "a.b": [1, "two", null] },
    events: [{ name: "exception", timestamp: "2026-11-27T04:50:01.000001+00:00", attributes: { "": "" } }],
    ...over,
  });
  const spanNames = (page: { items: SpanRecord[] } | undefined) => page?.items.map((s) => s.name);

  it("stores a run's spans in the order sent, after the ones before, round-tripping every field, and pages them", async () => {
    const runId = newId();
    const root = span("root");
    const child = span("child", { parentId: root.spanId, status: "ERROR", events: [] });
    expect(await store.appendSpans(runId, org, [root, child])).toBe(true);
    expect(await replica.appendSpans(runId, org, [span("later")])).toBe(true);
    const all = await store.listSpans(runId, org, 0, 10);
    expect(all?.totalCount).toBe(3);
    expect(all?.items.slice(0, 2)).toEqual([root, child]);
    expect(spanNames(await store.listSpans(runId, org, 1, 1))).toEqual(["child"]);
    expect(await store.listSpans(runId, org, 3, 10)).toEqual({ items: [], totalCount: 3 });
  });

  it("never interleaves the spans of concurrent batches, from two replicas", async () => {
    const runId = newId();
    const batches = Array.from({ length: 10 }, (_, b) => Array.from({ length: 3 }, (_, i) => span(`${b}-${i}`)));
    await Promise.all(batches.map((spans, b) => (b % 2 ? replica : store).appendSpans(runId, org, spans)));
    const names = spanNames(await store.listSpans(runId, org, 0, 100))!;
    expect(names).toHaveLength(30);
    for (let i = 0; i < 30; i += 3) {
      const b = names[i]!.split("-")[0];
      expect(names.slice(i, i + 3)).toEqual([`${b}-0`, `${b}-1`, `${b}-2`]);
    }
  });

  it("binds a run's spans to the organization of the first batch, apart from its event log; unknown runs have none", async () => {
    const runId = newId();
    expect(await store.listSpans(runId, org, 0, 10)).toBeUndefined();
    await store.append({ runKind: "structure-run", runId }, otherOrg, batch(1));
    expect(await store.appendSpans(runId, org, [span("mine")])).toBe(true);
    expect(await replica.appendSpans(runId, otherOrg, [span("theirs")])).toBeUndefined();
    expect(await store.listSpans(runId, otherOrg, 0, 10)).toBeUndefined();
    expect(spanNames(await store.listSpans(runId, org, 0, 10))).toEqual(["mine"]);
  });
});
