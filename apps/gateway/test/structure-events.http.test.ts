import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { storeKinds } from "@loom/testing/servers";
import { signAccessToken } from "@loom/testing/tokens";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { structureEventListSchema, structureEventSchema } from "../src/schemas.ts";
import { expectError } from "./expect-error.ts";

const uuid = () => crypto.randomUUID();
const event = (type: string, payload?: unknown) => ({
  type,
  timestamp: 1795000000.125,
  ...(payload !== undefined ? { payload } : {}),
});

describe.each(storeKinds("structure-run events over HTTP"))("structure-run events over HTTP (%s store)", (store) => {
  let stack: TestStack;
  let admin: ApiClient;
  let stranger: ApiClient;
  beforeAll(async () => {
    stack = await startStack(store);
    admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
    stranger = apiClient(stack.gatewayUrl, await signAccessToken({ sub: `events-stranger-${store}` }));
  });
  afterAll(() => stack?.close());

  const list = async (runId: string, query = "", client = admin) =>
    client.get(`/structure-runs/${runId}/events${query}`);

  it("accepts {events: [...]}, a bare array and a single bare event: 202, no body, appended in order", async () => {
    const runId = uuid();
    const wrapped = await admin.post(`/structure-runs/${runId}/events`, { events: [event("A", { n: 1 }), event("B")] });
    expect(wrapped.status).toBe(202);
    expect(wrapped.body).toBeUndefined();
    expect((await admin.post(`/structure-runs/${runId}/events`, [event("C"), event("D", [1, "two"])])).status).toBe(
      202,
    );
    expect((await admin.post(`/api/structure-runs/${runId}/events`, event("E", "text"))).status).toBe(202);
    const res = structureEventListSchema.parse((await list(runId)).body);
    expect(res.events.map((e) => e.type)).toEqual(["A", "B", "C", "D", "E"]);
    expect(res.events.map((e) => e.payload)).toEqual([{ n: 1 }, null, null, [1, "two"], "text"]);
    expect(
      res.events.every((e) => e.structure_run_id === runId && e.origin === "USER" && e.timestamp === 1795000000.125),
    ).toBe(true);
    expect(res).toMatchObject({ count: 5, total_count: 5, offset: 0, limit: 100, next_offset: 5 });
  });

  it("gets one event by id, and 404 for another organization's or an assistant run's", async () => {
    const runId = uuid();
    await admin.post(`/structure-runs/${runId}/events`, [event("Only", { x: true })]);
    const stored = (await list(runId)).body.events[0];
    const got = await admin.get(`/events/${stored.event_id}`);
    expect(got.status).toBe(200);
    expect(structureEventSchema.parse(got.body)).toEqual(stored);
    expectError(await stranger.get(`/events/${stored.event_id}`), 404, "NotFound");
    expectError(await admin.get(`/events/${uuid()}`), 404, "NotFound");
  });

  it("rejects a batch with one bad item, naming it, and writes nothing", async () => {
    const runId = uuid();
    await admin.post(`/structure-runs/${runId}/events`, [event("First")]);
    const bad = expectError(
      await admin.post(`/structure-runs/${runId}/events`, [
        event("ok"),
        { type: "", timestamp: 1 },
        { type: "x" },
        event("ok"),
      ]),
      400,
      "ValidationError",
    );
    expect(bad.errors.map((e) => e.path)).toEqual(["body[1].type", "body[2].timestamp"]);
    expect(
      expectError(
        await admin.post(`/structure-runs/${runId}/events`, { events: [event("ok"), { type: 5, timestamp: 1 }] }),
        400,
        "ValidationError",
      ).errors[0]?.path,
    ).toBe("body.events[1].type");
    expect(
      expectError(
        await admin.post(`/structure-runs/${runId}/events`, { timestamp: "now", type: "x" }),
        400,
        "ValidationError",
      ).errors[0]?.path,
    ).toBe("body.timestamp");
    expectError(await admin.post(`/structure-runs/${runId}/events`, "{nope"), 400, "ValidationError");
    expectError(await admin.post(`/structure-runs/${runId}/events`), 400, "ValidationError");
    expectError(await admin.post(`/structure-runs/${runId}/events`, []), 400, "ValidationError");
    expect((await list(runId)).body.total_count).toBe(1);
  });

  it("takes 1,000 events in one request and refuses 1,001; type bounds 1..200", async () => {
    const runId = uuid();
    expect(
      (
        await admin.post(
          `/structure-runs/${runId}/events`,
          Array.from({ length: 1000 }, (_, i) => event(`e${i}`)),
        )
      ).status,
    ).toBe(202);
    expectError(
      await admin.post(
        `/structure-runs/${runId}/events`,
        Array.from({ length: 1001 }, (_, i) => event(`e${i}`)),
      ),
      400,
      "ValidationError",
    );
    expect((await admin.post(`/structure-runs/${runId}/events`, event("t".repeat(200)))).status).toBe(202);
    expectError(await admin.post(`/structure-runs/${runId}/events`, event("t".repeat(201))), 400, "ValidationError");
    expect((await list(runId, "?limit=1")).body.total_count).toBe(1001);
  });

  it("takes bodies up to 5 MiB and answers 413 beyond, writing nothing", async () => {
    const runId = uuid();
    const big = "x".repeat(1024 * 1024);
    expect(
      (await admin.post(`/structure-runs/${runId}/events`, [event("a", big), event("b", big), event("c", big)])).status,
    ).toBe(202);
    expectError(
      await admin.post(
        `/structure-runs/${runId}/events`,
        Array.from({ length: 6 }, (_, i) => event(`big${i}`, big)),
      ),
      413,
      "PayloadTooLarge",
    );
    expect((await list(runId, "?limit=1")).body.total_count).toBe(3);
  });

  it("binds a run to the organization that wrote it first: others get 404 and write nothing", async () => {
    const runId = uuid();
    await admin.post(`/structure-runs/${runId}/events`, [event("mine")]);
    expectError(await stranger.post(`/structure-runs/${runId}/events`, [event("theirs")]), 404, "NotFound");
    expectError(await list(runId, "", stranger), 404, "NotFound");
    expect((await list(runId)).body.events.map((e: { type: string }) => e.type)).toEqual(["mine"]);
  });

  it("pages by offset and limit; 404 for a run never written", async () => {
    const runId = uuid();
    await admin.post(
      `/structure-runs/${runId}/events`,
      Array.from({ length: 7 }, (_, i) => event(`e${i}`)),
    );
    const page = (await list(runId, "?offset=2&limit=3")).body;
    expect(page).toMatchObject({ count: 3, offset: 2, limit: 3, next_offset: 5, total_count: 7 });
    expect(page.events.map((e: { type: string }) => e.type)).toEqual(["e2", "e3", "e4"]);
    expect((await list(runId, "?offset=7")).body).toMatchObject({ count: 0, next_offset: 7, total_count: 7 });
    for (const bad of ["?offset=-1", "?limit=0", "?limit=1001", "?offset=abc"])
      expectError(await list(runId, bad), 400, "ValidationError");
    expectError(await list(uuid()), 404, "NotFound");
    expectError(await admin.get("/structure-runs/not-a-uuid/events"), 400, "ValidationError");
  });
});
