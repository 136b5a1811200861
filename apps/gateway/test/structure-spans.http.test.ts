import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { storeKinds } from "@loom/testing/servers";
import { signAccessToken } from "@loom/testing/tokens";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spanListSchema } from "../src/schemas.ts";
import { expectError } from "./expect-error.ts";

const uuid = () => crypto.randomUUID();

/** A span as griptape's GriptapeCloudObservabilityDriver exports it (OpenTelemetry's ns_to_iso_str times). */
const span = (name: string, over: Record<string, unknown> = {}) => ({
  trace_id: "00000000-0000-0000-8c2d-2b0e43c0a1f7",
  span_id: uuid(),
  parent_id: null,
  name,
  start_time: "2026-11-27T04:50:00.123456+00:00",
  end_time: "2026-11-27T04:50:01.654321+00:00",
  status: "OK",
  attributes: { "func.name": name, "func.args": "[]", count: 2, ok: true },
  events: [
    {
      name: "exception",
      timestamp: "2026-11-27T04:50:01.000001+00:00",
      attributes: { "exception.type": "ValueError", "exception.message": "boom" },
    },
  ],
  ...over,
});

describe.each(storeKinds("structure-run spans over HTTP"))("structure-run spans over HTTP (%s store)", (store) => {
  let stack: TestStack;
  let admin: ApiClient;
  let stranger: ApiClient;
  beforeAll(async () => {
    stack = await startStack(store);
    admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
    stranger = apiClient(stack.gatewayUrl, await signAccessToken({ sub: `spans-stranger-${store}` }));
  });
  afterAll(() => stack?.close());

  const spansOf = async (runId: string, query = "", client = admin) => {
    const res = await client.get(`/structure-runs/${runId}/spans${query}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return spanListSchema.parse(res.body);
  };

  it("stores griptape's bare array with exactly 200 and the span ids, and lists the spans as sent, in order", async () => {
    const runId = uuid();
    const root = span("Agent.run");
    const child = span("PromptTask.run", { parent_id: root.span_id, status: "ERROR", events: [] });
    const created = await admin.post(`/api/structure-runs/${runId}/spans`, [root, child]);
    expect(created.status).toBe(200);
    expect(created.body).toEqual({ span_ids: [root.span_id, child.span_id] });
    const later = span("Agent.run again", { status: "UNSET", attributes: {} });
    expect((await admin.post(`/structure-runs/${runId}/spans`, [later])).body).toEqual({ span_ids: [later.span_id] });

    const listed = await spansOf(runId);
    expect(listed.spans).toEqual([root, child, later]);
    expect(listed.pagination).toEqual({ page_number: 1, page_size: 20, total_count: 3, total_pages: 1 });
  });

  it("pages the spans with page and page_size", async () => {
    const runId = uuid();
    const sent = Array.from({ length: 5 }, (_, i) => span(`step ${i}`));
    await admin.post(`/structure-runs/${runId}/spans`, sent.slice(0, 2));
    await admin.post(`/structure-runs/${runId}/spans`, sent.slice(2));
    const second = await spansOf(runId, "?page=2&page_size=2");
    expect(second.spans.map((s) => s.name)).toEqual(["step 2", "step 3"]);
    expect(second.pagination).toEqual({
      page_number: 2,
      page_size: 2,
      total_count: 5,
      total_pages: 3,
      next_page: 3,
      previous_page: 1,
    });
    expect((await spansOf(runId, "?page=4&page_size=2")).spans).toEqual([]);
    expectError(await admin.get(`/structure-runs/${runId}/spans?page_size=101`), 400, "ValidationError");
  });

  it("rejects a bad batch whole, naming every bad field, and stores nothing", async () => {
    const runId = uuid();
    const bad = expectError(
      await admin.post(`/structure-runs/${runId}/spans`, [
        span("fine"),
        span("", { start_time: "yesterday", status: "FINE" }),
        span("x", { span_id: "", events: [{ name: "e", timestamp: 5, attributes: {} }] }),
      ]),
      400,
      "ValidationError",
    );
    expect(bad.errors.map((e) => e.path)).toEqual([
      "body[1].name",
      "body[1].start_time",
      "body[1].status",
      "body[2].span_id",
      "body[2].events[0].timestamp",
    ]);
    expectError(await admin.get(`/structure-runs/${runId}/spans`), 404, "NotFound");

    for (const body of [[], { spans: [span("wrapped")] }, span("bare object")]) {
      expectError(await admin.post(`/structure-runs/${runId}/spans`, body), 400, "ValidationError");
    }
    const tooMany = Array.from({ length: 1001 }, (_, i) => span(`s${i}`, { events: [], attributes: {} }));
    expect(
      expectError(await admin.post(`/structure-runs/${runId}/spans`, tooMany), 400, "ValidationError").errors[0],
    ).toMatchObject({ path: "body", message: "must hold at most 1000 spans" });
    expectError(await admin.post(`/structure-runs/not-a-uuid/spans`, [span("x")]), 400, "ValidationError");
    expectError(await admin.get(`/structure-runs/${runId}/spans`), 404, "NotFound");
  });

  it("keeps a run's spans to the organization that sent the first: another's reads and writes are 404, nothing stored", async () => {
    const runId = uuid();
    await admin.post(`/structure-runs/${runId}/spans`, [span("mine")]);
    expectError(await stranger.get(`/structure-runs/${runId}/spans`), 404, "NotFound");
    expectError(await stranger.post(`/structure-runs/${runId}/spans`, [span("theirs")]), 404, "NotFound");
    expect((await spansOf(runId)).spans.map((s) => s.name)).toEqual(["mine"]);
    expectError(await admin.get(`/structure-runs/${uuid()}/spans`), 404, "NotFound");
  });
});
