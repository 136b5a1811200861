import { create, fromBinary, fromJson, type JsonValue, type MessageInitShape, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createMemoryBus } from "@loom/bus/memory";
import { fieldViolationsOf } from "@loom/contracts/errors";
import { newId } from "@loom/contracts/ids";
import { subjects } from "@loom/contracts/subjects";
import {
  type Event,
  EventSchema,
  EventsService,
  type NewEvent,
  NewEventSchema,
  RunKind,
  type Span,
  SpanSchema,
} from "@loom/proto/events/v1/events_pb";
import { headersFor, type Principal } from "@loom/server/principal";
import { type RunningServer, startRpcServer } from "@loom/server/rpc-server";
import { httpTransport } from "@loom/server/transports";
import { createLogger } from "@loom/telemetry/logger";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openEventsStore, wireEvents } from "../src/wiring.ts";

const serviceToken = "events-test-token-0123456789";

/** The events service over real HTTP on port 0, as the gateway and the runs service call it. */
describe.each(storeKinds("events service"))("events service (%s store)", (kind) => {
  let server: RunningServer;
  let client: Client<typeof EventsService>;
  const bus = createMemoryBus();
  const db = freshDatabaseName();
  const alice: Principal = { userId: newId(), organizationId: newId() };
  const mallory: Principal = { userId: newId(), organizationId: newId() };

  beforeAll(async () => {
    const store = await openEventsStore({ url: kind === "mongo" ? testServers.mongoUrl : undefined, db });
    server = await startRpcServer({
      services: [await wireEvents(store, bus)],
      serviceToken,
      logger: createLogger("test", "silent"),
    });
    client = createClient(EventsService, httpTransport(server.url, serviceToken));
  });
  afterAll(async () => {
    await server?.close();
    await bus.close();
    if (kind === "mongo") await dropDatabase(testServers.mongoUrl!, db);
  });

  const as = (principal: Principal) => ({ headers: headersFor(principal) });
  const newEvent = (
    over: Partial<Pick<NewEvent, "type" | "origin" | "timestamp" | "payloadJson">> & { payload?: JsonValue } = {},
  ): NewEvent => {
    const { payload, ...rest } = over;
    return create(NewEventSchema, {
      type: "Thing",
      origin: "USER",
      timestamp: 1767225600.25,
      ...rest,
      ...(payload === undefined ? {} : { payload: fromJson(ValueSchema, payload) }),
    });
  };
  const structureRun = (runId = newId()) => ({ runKind: RunKind.STRUCTURE_RUN, runId });
  const failure = (call: Promise<unknown>) =>
    call.then(
      () => {
        throw new Error("expected the call to fail");
      },
      (e: unknown) => ConnectError.from(e),
    );
  const listAll = (run: { runKind: RunKind; runId: string }, who = alice) =>
    client.listEvents({ ...run, limit: 1000 }, as(who));

  it("appends batches at consecutive offsets and reads them back as stored", async () => {
    const run = structureRun();
    const first = await client.appendEvents(
      { ...run, events: [newEvent({ type: "A", payload: { n: 1, list: ["x", null] } }), newEvent({ type: "B" })] },
      as(alice),
    );
    const second = await client.appendEvents({ ...run, events: [newEvent({ type: "C", payload: "text" })] }, as(alice));
    expect([...first.events, ...second.events].map((e) => [e.type, e.offset])).toEqual([
      ["A", 0n],
      ["B", 1n],
      ["C", 2n],
    ]);
    const [a, b] = first.events;
    expect(a).toMatchObject({
      runKind: RunKind.STRUCTURE_RUN,
      runId: run.runId,
      origin: "USER",
      timestamp: 1767225600.25,
      organizationId: alice.organizationId,
    });
    expect(a!.payload?.kind).toMatchObject({ case: "structValue" });
    expect(b!.payload?.kind).toEqual({ case: "nullValue", value: 0 });
    expect(a!.createdAt).toBeDefined();
    const list = await listAll(run);
    expect(list.totalCount).toBe(3n);
    expect(list.events).toEqual([...first.events, ...second.events]);
    expect((await client.getEvent({ eventId: a!.eventId.toUpperCase() }, as(alice))).event).toEqual(a);
  });

  it("rejects a batch with one bad item among good ones, naming each bad field, and writes nothing", async () => {
    const run = structureRun();
    await client.appendEvents({ ...run, events: [newEvent()] }, as(alice));
    const error = await failure(
      client.appendEvents(
        {
          ...run,
          events: [
            newEvent(),
            newEvent({ type: "" }),
            newEvent(),
            newEvent({ type: "x".repeat(201), origin: "ROBOT" }),
            newEvent({ timestamp: Number.NaN }),
            newEvent({ type: "é".repeat(200) }),
            create(NewEventSchema, {
              type: "NaN",
              origin: "USER",
              payload: create(ValueSchema, { kind: { case: "numberValue", value: Number.NaN } }),
            }),
          ],
        },
        as(alice),
      ),
    );
    expect(error.code).toBe(Code.InvalidArgument);
    expect(fieldViolationsOf(error).map((v) => v.path)).toEqual([
      "body.events[1].type",
      "body.events[3].type",
      "body.events[3].origin",
      "body.events[4].timestamp",
      "body.events[6].payload",
    ]);
    const list = await listAll(run);
    expect(list.totalCount).toBe(1n);
    expect(list.events).toHaveLength(1);
    // A new run stays unknown after a rejected first batch.
    const fresh = structureRun();
    await failure(client.appendEvents({ ...fresh, events: [newEvent({ origin: "" })] }, as(alice)));
    expect((await failure(listAll(fresh))).code).toBe(Code.NotFound);
  });

  it("rejects empty and oversized batches, bad run ids and an unspecified run kind", async () => {
    const paths = async (req: Parameters<typeof client.appendEvents>[0]) =>
      fieldViolationsOf(await failure(client.appendEvents(req, as(alice)))).map((v) => v.path);
    expect(await paths({ ...structureRun(), events: [] })).toEqual(["body.events"]);
    expect(await paths({ ...structureRun(), events: Array.from({ length: 1001 }, () => newEvent()) })).toEqual([
      "body.events",
    ]);
    expect(await paths({ runKind: RunKind.STRUCTURE_RUN, runId: "nope", events: [newEvent()] })).toEqual([
      "path.structure_run_id",
    ]);
    expect(await paths({ runKind: RunKind.ASSISTANT_RUN, runId: "nope", events: [newEvent()] })).toEqual([
      "path.assistant_run_id",
    ]);
    expect(await paths({ runKind: RunKind.UNSPECIFIED, runId: newId(), events: [newEvent()] })).toEqual(["run_kind"]);
    const thousand = await client.appendEvents(
      { ...structureRun(), events: Array.from({ length: 1000 }, () => newEvent()) },
      as(alice),
    );
    expect(thousand.events.at(-1)?.offset).toBe(999n);
  });

  it("stores a payload sent as JSON text, answers the append with that text, and reads and publishes it as a Value", async () => {
    const run = { runKind: RunKind.ASSISTANT_RUN, runId: newId() };
    const published: Event[] = [];
    const sub = bus.subscribe(subjects.events("assistant-run", run.runId), (data) =>
      published.push(fromBinary(EventSchema, data)),
    );
    const prompt = { type: "StartPromptEvent", prompt_stack: { messages: [{ role: "user", text: "hé \u2028" }] } };
    const text = JSON.stringify(prompt);
    const answer = await client.appendEvents(
      { ...run, events: [newEvent({ type: "StartPromptEvent", origin: "ASSISTANT", payloadJson: text })] },
      as(alice),
    );
    expect(answer.events[0]).toMatchObject({ type: "StartPromptEvent", offset: 0n, payloadJson: text });
    expect(answer.events[0]!.payload).toBeUndefined();
    const [read] = (await listAll(run)).events;
    expect(read!.payloadJson).toBe("");
    expect(toJson(ValueSchema, read!.payload!)).toEqual(prompt);
    await expect.poll(() => published.length).toBe(1);
    expect(published[0]).toEqual(read);
    sub.unsubscribe();
  });

  it("refuses text that is not JSON, and a payload sent both ways, naming the event, and writes nothing", async () => {
    const run = structureRun();
    await client.appendEvents({ ...run, events: [newEvent()] }, as(alice));
    const notJson = await failure(
      client.appendEvents(
        { ...run, events: [newEvent(), newEvent({ payloadJson: "{'single': 'quotes'}" })] },
        as(alice),
      ),
    );
    expect(notJson.code).toBe(Code.InvalidArgument);
    expect(fieldViolationsOf(notJson)).toMatchObject([
      { path: "body.events[1].payload_json", message: "must be JSON text" },
    ]);
    const both = await failure(
      client.appendEvents({ ...run, events: [newEvent({ payload: 1, payloadJson: "1" })] }, as(alice)),
    );
    expect(fieldViolationsOf(both).map((v) => v.path)).toEqual(["body.events[0].payload_json"]);
    expect((await listAll(run)).totalCount).toBe(1n);
  });

  it("publishes each stored event on the bus, in offset order, after storing it", async () => {
    const run = structureRun();
    const got: Array<{ subject: string; event: Event }> = [];
    const sub = bus.subscribe(subjects.events("structure-run", run.runId), (data, subject) =>
      got.push({ subject, event: fromBinary(EventSchema, data) }),
    );
    const assistantRun = { runKind: RunKind.ASSISTANT_RUN, runId: newId() };
    const other: Event[] = [];
    const otherSub = bus.subscribe(subjects.events("assistant-run", assistantRun.runId), (data) =>
      other.push(fromBinary(EventSchema, data)),
    );

    const stored = await client.appendEvents(
      { ...run, events: [newEvent({ type: "A" }), newEvent({ type: "B", payload: [1, 2] })] },
      as(alice),
    );
    const more = await client.appendEvents({ ...run, events: [newEvent({ type: "C" })] }, as(alice));
    const lifecycle = await client.appendEvents(
      { ...assistantRun, events: [newEvent({ type: "AssistantRunQueued", origin: "SYSTEM" })] },
      as(alice),
    );
    await expect.poll(() => got.length + other.length).toBe(4);
    expect(got.map((g) => g.subject)).toEqual(Array(3).fill(`loom.events.structure-run.${run.runId}`));
    expect(got.map((g) => g.event)).toEqual([...stored.events, ...more.events]);
    expect(other).toEqual(lifecycle.events);

    // Nothing is published for a rejected or refused append.
    await failure(client.appendEvents({ ...run, events: [newEvent({ type: "" })] }, as(alice)));
    await failure(client.appendEvents({ ...run, events: [newEvent()] }, as(mallory)));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(got).toHaveLength(3);
    sub.unsubscribe();
    otherSub.unsubscribe();
  });

  it("answers NOT_FOUND to another organization for appends, lists and gets", async () => {
    const run = structureRun();
    const [event] = (await client.appendEvents({ ...run, events: [newEvent()] }, as(alice))).events;
    expect((await failure(client.appendEvents({ ...run, events: [newEvent()] }, as(mallory)))).code).toBe(
      Code.NotFound,
    );
    expect((await failure(listAll(run, mallory))).code).toBe(Code.NotFound);
    expect((await failure(client.getEvent({ eventId: event!.eventId }, as(mallory)))).code).toBe(Code.NotFound);
    expect((await listAll(run)).totalCount).toBe(1n);

    const assistantRun = { runKind: RunKind.ASSISTANT_RUN, runId: newId() };
    await client.appendEvents({ ...assistantRun, events: [newEvent({ origin: "SYSTEM" })] }, as(alice));
    expect((await failure(listAll(assistantRun, mallory))).code).toBe(Code.NotFound);
  });

  it("pages a log by offset and limit, with the log's length", async () => {
    const run = structureRun();
    await client.appendEvents(
      { ...run, events: Array.from({ length: 150 }, (_, i) => newEvent({ type: `e${i}` })) },
      as(alice),
    );
    const page = async (offset: bigint, limit: number) => {
      const res = await client.listEvents({ ...run, offset, limit }, as(alice));
      return { types: res.events.map((e) => e.type), total: res.totalCount };
    };
    expect((await page(0n, 0)).types).toHaveLength(100);
    expect(await page(10n, 3)).toEqual({ types: ["e10", "e11", "e12"], total: 150n });
    expect(await page(148n, 10)).toEqual({ types: ["e148", "e149"], total: 150n });
    expect(await page(150n, 10)).toEqual({ types: [], total: 150n });
    expect(await page(2n ** 62n, 10)).toEqual({ types: [], total: 150n });
    const paths = async (offset: bigint, limit: number) =>
      fieldViolationsOf(await failure(client.listEvents({ ...run, offset, limit }, as(alice)))).map((v) => v.path);
    expect(await paths(-1n, 10)).toEqual(["query.offset"]);
    expect(await paths(0n, 1001)).toEqual(["query.limit"]);
    expect(await paths(0n, -1)).toEqual(["query.limit"]);
  });

  it("reads an unknown assistant run as an empty log, and an unknown structure run as NOT_FOUND", async () => {
    const empty = await client.listEvents({ runKind: RunKind.ASSISTANT_RUN, runId: newId() }, as(alice));
    expect(empty).toMatchObject({ events: [], totalCount: 0n });
    expect((await failure(client.listEvents(structureRun(), as(alice)))).code).toBe(Code.NotFound);
  });

  it("gets structure-run events only", async () => {
    const [assistantEvent] = (
      await client.appendEvents(
        { runKind: RunKind.ASSISTANT_RUN, runId: newId(), events: [newEvent({ origin: "SYSTEM" })] },
        as(alice),
      )
    ).events;
    expect((await failure(client.getEvent({ eventId: assistantEvent!.eventId }, as(alice)))).code).toBe(Code.NotFound);
    expect((await failure(client.getEvent({ eventId: newId() }, as(alice)))).code).toBe(Code.NotFound);
    expect((await failure(client.getEvent({ eventId: "not-a-uuid" }, as(alice)))).code).toBe(Code.NotFound);
  });

  const newSpan = (over: Omit<MessageInitShape<typeof SpanSchema>, "$typeName"> = {}): Span =>
    create(SpanSchema, {
      spanId: newId(),
      traceId: newId(),
      name: "Agent.run",
      startTime: "2026-11-27T04:50:00.123456+00:00",
      endTime: "2026-11-27T04:50:01.654321Z",
      status: "OK",
      attributes: { n: 1 },
      events: [{ name: "exception", timestamp: "2026-11-27T04:50:01+00:00", attributes: {} }],
      ...over,
    });

  it("checks every span of a batch itself, naming each bad field with the public path, and stores none", async () => {
    const runId = newId();
    const paths = async (spans: Span[], id = runId) =>
      fieldViolationsOf(await failure(client.appendSpans({ structureRunId: id, spans }, as(alice)))).map((v) => v.path);
    expect(
      await paths([
        newSpan(),
        newSpan({ spanId: "", traceId: "t".repeat(101), parentId: "", name: "tab\there", status: "DONE" }),
        newSpan({
          startTime: "2026-11-27 04:50:00",
          endTime: "2026-11-27T04:50:00",
          events: [{ name: "", timestamp: "soon" }],
        }),
      ]),
    ).toEqual([
      "body[1].status",
      "body[1].span_id",
      "body[1].trace_id",
      "body[1].parent_id",
      "body[1].name",
      "body[2].start_time",
      "body[2].end_time",
      "body[2].events[0].name",
      "body[2].events[0].timestamp",
    ]);
    expect(await paths([])).toEqual(["body"]);
    expect(await paths(Array.from({ length: 1001 }, () => newSpan()))).toEqual(["body"]);
    expect(await paths([newSpan()], "nope")).toEqual(["path.structure_run_id"]);
    expect((await failure(client.listSpans({ structureRunId: runId }, as(alice)))).code).toBe(Code.NotFound);
  });

  it("stores spans for one organization and lists them by page; others get NOT_FOUND", async () => {
    const runId = newId().toUpperCase();
    const spans = [newSpan({ name: "a" }), newSpan({ name: "b", parentId: "root" }), newSpan({ name: "c" })];
    expect((await client.appendSpans({ structureRunId: runId, spans }, as(alice))).spanIds).toEqual(
      spans.map((s) => s.spanId),
    );
    const page = await client.listSpans(
      { structureRunId: runId.toLowerCase(), page: { page: 2, pageSize: 2 } },
      as(alice),
    );
    expect(page.spans).toEqual([spans[2]]);
    expect(page.page).toMatchObject({ pageNumber: 2, pageSize: 2, totalCount: 3n, totalPages: 2 });
    expect((await client.listSpans({ structureRunId: runId }, as(alice))).spans[1]).toEqual(spans[1]);
    const theirs = { structureRunId: runId, spans: [newSpan()] };
    expect((await failure(client.appendSpans(theirs, as(mallory)))).code).toBe(Code.NotFound);
    expect((await failure(client.listSpans({ structureRunId: runId }, as(mallory)))).code).toBe(Code.NotFound);
  });

  it("needs a principal", async () => {
    expect((await failure(client.listEvents(structureRun()))).code).toBe(Code.Unauthenticated);
    const follow = async () => {
      for await (const _ of client.followEvents(structureRun())) return;
    };
    expect((await failure(follow())).code).toBe(Code.Unauthenticated);
  });
});
