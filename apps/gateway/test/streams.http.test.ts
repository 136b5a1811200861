import { terminalLifecycleEvents } from "@loom/contracts/run-lifecycle";
import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { createScriptedModel } from "@loom/testing/scripted-model";
import { storeKinds } from "@loom/testing/servers";
import { openSse } from "@loom/testing/sse";
import { signAccessToken } from "@loom/testing/tokens";
import { EventSource } from "eventsource";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assistantEventSchema, errorBodySchema } from "../src/schemas.ts";

const uuid = () => crypto.randomUUID();

describe.each(storeKinds("event streams over HTTP"))("event streams over HTTP (%s store)", (store) => {
  let stack: TestStack;
  let admin: ApiClient;
  let auth: Record<string, string>;
  const model = createScriptedModel();

  beforeAll(async () => {
    // One key opens 100 streams at once while the last 100 may still be closing: above the default cap.
    stack = await startStack(store, {
      inject: { runs: { model } },
      memoryBus: true,
      gateway: { STREAMS_PER_CREDENTIAL: 1_000 },
    });
    admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
    auth = { authorization: `Bearer ${stack.bootstrapKey}` };
  });
  afterAll(() => stack?.close());

  const assistant = async () => (await admin.post("/assistants", { name: "streamer" })).body.assistant_id as string;
  const streamUrl = (runId: string, query = "") => `${stack.gatewayUrl}/assistant-runs/${runId}/events/stream${query}`;

  it("streams a stream:true run: the log, then live TextChunkEvents, and ends after the terminal event", async () => {
    model.script({ answer: () => "one two three four five six", chunkDelayMs: 20 });
    const run = (await admin.post(`/assistants/${await assistant()}/runs`, { stream: true })).body;
    const sse = await openSse(streamUrl(run.assistant_run_id), auth);
    expect(sse.status).toBe(200);
    expect(sse.headers.get("content-type")).toMatch(/^text\/event-stream/);
    await sse.ended;
    const types = sse.events.map((e) => JSON.parse(e.data).type);
    expect(types.filter((t) => t === "TextChunkEvent")).toHaveLength(6);
    expect(types.at(-1)).toBe("AssistantRunSucceeded");
    expect(sse.events.map((e) => Number(e.id))).toEqual(sse.events.map((_, i) => i));
    expect(sse.events.every((e) => e.event === undefined)).toBe(true);
    // The same events, in the same shape, as the list.
    const listed = (await admin.get(`/assistant-runs/${run.assistant_run_id}/events`)).body.events;
    expect(sse.events.map((e) => assistantEventSchema.parse(JSON.parse(e.data)))).toEqual(listed);
  });

  it("a client that dies mid-run and resumes with Last-Event-ID gets every event exactly once, in order", async () => {
    model.script({ answer: () => Array.from({ length: 30 }, (_, i) => `w${i}`).join(" "), chunkDelayMs: 15 });
    const run = (await admin.post(`/assistants/${await assistant()}/runs`, { stream: true })).body;
    const first = await openSse(streamUrl(run.assistant_run_id), auth);
    await first.waitFor(8);
    first.close();
    const lastId = first.events.at(-1)!.id!;
    const resumed = await openSse(streamUrl(run.assistant_run_id), { ...auth, "last-event-id": lastId });
    await resumed.ended;
    const offsets = [...first.events, ...resumed.events].map((e) => Number(e.id));
    const total = (await admin.get(`/assistant-runs/${run.assistant_run_id}/events?limit=1000`)).body.total_count;
    expect(offsets).toEqual(Array.from({ length: total }, (_, i) => i));
    expect(JSON.parse(resumed.events.at(-1)!.data).type).toBe("AssistantRunSucceeded");
  });

  it("resumes from an offset query, and a stream of a finished run ends by itself", async () => {
    model.script({ answer: () => "done" });
    const run = (await admin.post(`/assistants/${await assistant()}/runs`, {})).body;
    const whole = await openSse(streamUrl(run.assistant_run_id), auth);
    await whole.ended;
    const tail = await openSse(streamUrl(run.assistant_run_id, "?offset=3"), auth);
    await tail.ended;
    expect(tail.events.map((e) => e.id)).toEqual(whole.events.slice(3).map((e) => e.id));
  });

  it("a browser EventSource reads the stream through onmessage", async () => {
    model.script({ answer: () => "from a browser", chunkDelayMs: 10 });
    const run = (await admin.post(`/assistants/${await assistant()}/runs`, { stream: true })).body;
    const received: string[] = [];
    await new Promise<void>((resolve, reject) => {
      const source = new EventSource(streamUrl(run.assistant_run_id), {
        fetch: (input, init) => fetch(input, { ...init, headers: { ...init?.headers, ...auth } }),
      });
      source.onmessage = (message) => {
        received.push(JSON.parse(message.data).type);
        if (terminalLifecycleEvents.has(received.at(-1)!)) {
          source.close();
          resolve();
        }
      };
      // Before the terminal event (after it the test has closed the source) any error is a failure:
      // EventSource would reconnect on its own and hide a broken stream.
      source.onerror = () => {
        source.close();
        reject(new Error(`EventSource failed after ${received.length} events`));
      };
    });
    expect(received).toContain("TextChunkEvent");
    expect(received.at(-1)).toBe("AssistantRunSucceeded");
  });

  it("answers an unknown run, another organization's run, or a bad Last-Event-ID with an ordinary error before streaming", async () => {
    const unknown = await openSse(streamUrl(uuid()), auth);
    expect(unknown.status).toBe(404);
    expect(errorBodySchema.parse(unknown.errorBody).type).toBe("NotFound");
    model.script({ answer: () => "x" });
    const run = (await admin.post(`/assistants/${await assistant()}/runs`, {})).body;
    const stranger = await openSse(streamUrl(run.assistant_run_id), {
      authorization: `Bearer ${await signAccessToken({ sub: `sse-${store}` })}`,
    });
    expect(stranger.status).toBe(404);
    const bad = await openSse(streamUrl(run.assistant_run_id), { ...auth, "last-event-id": "abc" });
    expect(bad.status).toBe(400);
    expect((await openSse(`${stack.gatewayUrl}/structure-runs/${uuid()}/events/stream`, auth)).status).toBe(404);
  });

  it("streams a structure run and ends after StructureRunCompleted", async () => {
    const runId = uuid();
    await admin.post(`/structure-runs/${runId}/events`, [{ type: "StartStructureRunEvent", timestamp: 1 }]);
    const sse = await openSse(`${stack.gatewayUrl}/structure-runs/${runId}/events/stream`, auth);
    await sse.waitFor(1);
    await admin.post(`/structure-runs/${runId}/events`, [
      { type: "Progress", timestamp: 2 },
      { type: "StructureRunCompleted", timestamp: 3 },
    ]);
    await sse.ended;
    expect(sse.events.map((e) => JSON.parse(e.data).type)).toEqual([
      "StartStructureRunEvent",
      "Progress",
      "StructureRunCompleted",
    ]);
  });

  it("shares one upstream follow among a run's subscribers, each getting every event once from its own start", async () => {
    const bus = stack.bus as unknown as { subscriberCount(): number };
    const runId = uuid();
    const url = `${stack.gatewayUrl}/structure-runs/${runId}/events/stream`;
    const post = (...types: string[]) =>
      admin.post(
        `/structure-runs/${runId}/events`,
        types.map((type, i) => ({ type, timestamp: i })),
      );
    const before = bus.subscriberCount();
    await post("E0", "E1", "E2");
    const fromStart = await Promise.all(Array.from({ length: 20 }, () => openSse(url, auth)));
    await Promise.all(fromStart.map((s) => s.waitFor(3)));
    expect(bus.subscriberCount()).toBe(before + 1);
    // Joining behind the live edge (recent frames) and at it: still the one follow.
    const fromOffset = await openSse(`${url}?offset=1`, auth);
    const resumed = await openSse(url, { ...auth, "last-event-id": "2" });
    // Ahead of the log: a follow of its own.
    const ahead = await openSse(`${url}?offset=5`, auth);
    expect(bus.subscriberCount()).toBe(before + 2);
    await post("E3", "E4", "E5");
    await post("E6", "StructureRunCompleted");
    const all = [...fromStart, fromOffset, resumed, ahead];
    await Promise.all(all.map((s) => s.ended));
    const types = (s: (typeof all)[number]) => s.events.map((e) => JSON.parse(e.data).type);
    const log = ["E0", "E1", "E2", "E3", "E4", "E5", "E6", "StructureRunCompleted"];
    for (const s of fromStart) expect(types(s)).toEqual(log);
    expect(types(fromOffset)).toEqual(log.slice(1));
    expect(types(resumed)).toEqual(log.slice(3));
    expect(types(ahead)).toEqual(log.slice(5));
    expect(
      all.every((s) => s.events.every((e, i) => i === 0 || Number(e.id) === Number(s.events[i - 1]!.id) + 1)),
    ).toBe(true);
    const deadline = Date.now() + 5_000;
    while (bus.subscriberCount() !== before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(bus.subscriberCount()).toBe(before);
  });

  it("a run's feed started by a resuming client does not keep fresh subscribers off a shared follow", async () => {
    const bus = stack.bus as unknown as { subscriberCount(): number };
    const runId = uuid();
    const url = `${stack.gatewayUrl}/structure-runs/${runId}/events/stream`;
    await admin.post(
      `/structure-runs/${runId}/events`,
      ["E0", "E1", "E2"].map((type) => ({ type, timestamp: 1 })),
    );
    const before = bus.subscriberCount();
    const resumer = await openSse(url, { ...auth, "last-event-id": "1" });
    const fresh = await Promise.all(Array.from({ length: 10 }, () => openSse(url, auth)));
    // The resumer's feed starts at 2; the fresh ones (from 0) share a second one.
    expect(bus.subscriberCount()).toBe(before + 2);
    await admin.post(`/structure-runs/${runId}/events`, [{ type: "StructureRunCompleted", timestamp: 2 }]);
    await Promise.all([resumer, ...fresh].map((s) => s.ended));
    expect(resumer.events.map((e) => JSON.parse(e.data).type)).toEqual(["E2", "StructureRunCompleted"]);
    for (const s of fresh)
      expect(s.events.map((e) => JSON.parse(e.data).type)).toEqual(["E0", "E1", "E2", "StructureRunCompleted"]);
  });

  it("replays a finished run to a crowd from one follow: each stream gets the whole log once, resumes get its tail", async () => {
    const runId = uuid();
    const url = `${stack.gatewayUrl}/structure-runs/${runId}/events/stream`;
    const log = [...Array.from({ length: 30 }, (_, i) => `E${i}`), "StructureRunCompleted"];
    await admin.post(
      `/structure-runs/${runId}/events`,
      log.map((type, i) => ({ type, timestamp: i })),
    );
    // Every follow of this run subscribes to its subject on the bus first: count them.
    const bus = stack.bus as { subscribe: typeof stack.bus.subscribe };
    const subscribe = bus.subscribe;
    let follows = 0;
    bus.subscribe = (subject, onMessage) => {
      if (subject.includes(runId)) follows += 1;
      return subscribe.call(stack.bus, subject, onMessage);
    };
    try {
      const types = (s: Awaited<ReturnType<typeof openSse>>) => s.events.map((e) => JSON.parse(e.data).type);
      const first = await Promise.all(Array.from({ length: 30 }, () => openSse(url, auth)));
      await Promise.all(first.map((s) => s.ended));
      const later = await Promise.all(Array.from({ length: 30 }, () => openSse(url, auth)));
      await Promise.all(later.map((s) => s.ended));
      for (const s of [...first, ...later]) {
        expect(s.headers.get("content-type")).toMatch(/^text\/event-stream/);
        expect(types(s)).toEqual(log);
        expect(s.events.map((e) => Number(e.id))).toEqual(log.map((_, i) => i));
      }
      const resumed = await openSse(url, { ...auth, "last-event-id": "19" });
      const fromOffset = await openSse(`${url}?offset=25`, auth);
      const past = await openSse(url, { ...auth, "last-event-id": "30" });
      await Promise.all([resumed.ended, fromOffset.ended, past.ended]);
      expect(types(resumed)).toEqual(log.slice(20));
      expect(types(fromOffset)).toEqual(log.slice(25));
      expect(past.status).toBe(200);
      expect(past.events).toEqual([]);
      expect(follows).toBe(1);
      // Another organization still gets a plain 404, not the kept log.
      const stranger = await openSse(url, {
        authorization: `Bearer ${await signAccessToken({ sub: `sse-replay-${store}` })}`,
      });
      expect(stranger.status).toBe(404);
    } finally {
      bus.subscribe = subscribe;
    }
  });

  it("leaks no subscription: 1,000 streams opened and dropped leave the bus as it was", async () => {
    const bus = stack.bus as unknown as { subscriberCount(): number };
    // Half the streams on one run (one shared follow), half each on a run of its own (a follow each).
    const runs = Array.from({ length: 51 }, () => uuid());
    for (const runId of runs) await admin.post(`/structure-runs/${runId}/events`, [{ type: "Open", timestamp: 1 }]);
    const url = (runId: string) => `${stack.gatewayUrl}/structure-runs/${runId}/events/stream`;
    const before = bus.subscriberCount();
    for (let batch = 0; batch < 10; batch++) {
      const streams = await Promise.all(
        Array.from({ length: 100 }, (_, i) => openSse(url(runs[i % 2 === 0 ? 50 : (i - 1) / 2]!), auth)),
      );
      expect(streams.every((s) => s.status === 200)).toBe(true);
      expect(bus.subscriberCount()).toBe(before + 51);
      streams.forEach((s) => s.close());
      await Promise.all(streams.map((s) => s.ended));
    }
    const deadline = Date.now() + 5_000;
    while (bus.subscriberCount() !== before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(bus.subscriberCount()).toBe(before);
  }, 90_000); // 500 follows each read the store first: slow on FerretDB, more on a busy CI machine
});
