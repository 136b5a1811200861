import { createHash, randomBytes } from "node:crypto";
import { type AllInOne, startAllInOne } from "@loom/test-stacks/all-in-one";
import { type SplitService, type SplitStack, splitServices, startSplitStack } from "@loom/test-stacks/split-stack";
import { answer, type FakeOpenAI, startFakeOpenAI } from "@loom/testing/fake-openai";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { growth, type Scrape, scrapeMetrics } from "@loom/testing/metrics";
import { freshDatabaseName, needs, testServers } from "@loom/testing/servers";
import { openSse } from "@loom/testing/sse";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

/**
 * `/metrics` of every process (infra/README.md, "Metrics and alerts"): what a
 * user of the API does moves the documented series, read from the
 * processes' own metrics ports.
 */

const uploaded = "bytes counted by the storage service\n";

/** Does what the series count: a streamed run read over SSE, an upload and a download, a stream past the cap, a tool, an unknown path. */
async function exercise(api: ApiClient, baseUrl: string, key: string, whileStreamHeld: () => Promise<void>) {
  const auth = { authorization: `Bearer ${key}` };
  const assistantId = (await api.post("/assistants", { name: "metrics", input: "Say {{ args[0] }}" })).body
    .assistant_id;
  const created = await api.post(`/assistants/${assistantId}/runs`, { args: ["hello"], stream: true });
  expect(created.status).toBe(201);
  const runStream = await openSse(`${baseUrl}/assistant-runs/${created.body.assistant_run_id}/events/stream`, auth);
  await runStream.ended;
  expect(runStream.events.at(-1)?.data).toContain("AssistantRunSucceeded");

  const bucketId = (await api.post("/buckets", { name: "metrics" })).body.bucket_id;
  expect((await api.put(`/buckets/${bucketId}/assets`, { name: "a.txt" })).status).toBe(201);
  const putUrl = (await api.post(`/buckets/${bucketId}/asset-urls/a.txt`, { operation: "PUT" })).body.url;
  expect((await fetch(putUrl, { method: "PUT", body: uploaded })).status).toBe(200);
  const getUrl = (await api.post(`/buckets/${bucketId}/asset-urls/a.txt`, { operation: "GET" })).body.url;
  expect(await (await fetch(getUrl)).text()).toBe(uploaded);

  // A structure run's stream stays open until its last event: with STREAMS_PER_CREDENTIAL=1 a second one is refused.
  const structureRunId = crypto.randomUUID();
  expect(
    (await api.post(`/structure-runs/${structureRunId}/events`, [{ type: "StartStructureRunEvent", timestamp: 1 }]))
      .status,
  ).toBe(202);
  const held = await openSse(`${baseUrl}/structure-runs/${structureRunId}/events/stream`, auth);
  await held.waitFor(1);
  const refused = await openSse(`${baseUrl}/structure-runs/${structureRunId}/events/stream`, auth);
  expect(refused.status).toBe(429);
  await whileStreamHeld();
  await api.post(`/structure-runs/${structureRunId}/events`, [{ type: "StructureRunCompleted", timestamp: 2 }]);
  await held.ended;
  expect(held.events).toHaveLength(2);

  expect((await api.post("/tools", { name: "metrics" })).status).toBe(201);

  expect((await api.get("/no-such-thing")).status).toBe(404);
  expect((await api.as(undefined).get("/assistants")).status).toBe(401);
  return { runEvents: runStream.events.length };
}

/** Node's default process metrics, which every /metrics carries. */
function expectProcessMetrics(scrape: Scrape) {
  expect(scrape.value("process_cpu_user_seconds_total")).toBeGreaterThan(0);
  expect(scrape.value("nodejs_heap_size_used_bytes")).toBeGreaterThan(0);
  expect(scrape.value("nodejs_eventloop_lag_seconds")).toBeGreaterThanOrEqual(0);
}

const rpc = "loom_rpc_server_duration_seconds_count";
const http = "loom_http_request_duration_seconds_count";

describe.skipIf(
  !needs("MONGODB_URL", "metrics of the split deployment") || !needs("NATS_URL", "metrics of the split deployment"),
)("metrics of the split deployment", () => {
  const key = `loom_metrics-${randomBytes(24).toString("base64url")}`;
  let stack: SplitStack;
  let api: ApiClient;
  beforeAll(async () => {
    const db = freshDatabaseName("loom_metrics");
    stack = await startSplitStack(
      { MONGODB_URL: testServers.mongoUrl!, NATS_URL: testServers.natsUrl! },
      {
        identity: { MONGODB_DB: `${db}_identity`, BOOTSTRAP_API_KEY: key },
        assistants: { MONGODB_DB: `${db}_assistants` },
        events: { MONGODB_DB: `${db}_events` },
        runs: { MONGODB_DB: `${db}_runs` },
        storage: { MONGODB_DB: `${db}_storage` },
        tools: { MONGODB_DB: `${db}_tools` },
        gateway: { STREAMS_PER_CREDENTIAL: "1" },
      },
    );
    api = apiClient(stack.gatewayUrl, key);
  }, 60_000);
  afterAll(() => stack?.stop());

  const scrapeAll = async () =>
    Object.fromEntries(
      await Promise.all(splitServices.map(async (name) => [name, await scrapeMetrics(stack.metricsUrls[name])])),
    ) as Record<SplitService, Scrape>;

  it("serves /metrics on a port of its own in every process, and not on the API port", async () => {
    for (const name of splitServices) {
      expect(new URL(stack.metricsUrls[name]).port).not.toBe(new URL(stack.urls[name]).port);
      expect((await fetch(`${stack.urls[name]}/metrics`)).status, name).not.toBe(200);
    }
  });

  it("counts what a run, an upload, a download and a refused stream did, in the process that did it", async () => {
    const before = await scrapeAll();
    let openWhileHeld: number | undefined;
    const { runEvents } = await exercise(api, stack.gatewayUrl, key, async () => {
      openWhileHeld = (await scrapeMetrics(stack.metricsUrls.gateway)).value("loom_sse_connections_open");
    });
    const after = await scrapeAll();

    for (const name of splitServices) expectProcessMetrics(after[name]);

    // The gateway: requests by operation and status, streams, refusals, deliveries.
    const gateway = (name: string, labels?: Record<string, string>) =>
      growth(before.gateway, after.gateway, name, labels);
    expect(gateway(http, { operation: "CreateAssistantRun", status: "201" })).toBe(1);
    expect(gateway(http, { operation: "GetAssistantRunEventsSSE", status: "200" })).toBe(1);
    expect(gateway(http, { operation: "GetStructureRunEventsSSE", status: "429" })).toBe(1);
    expect(gateway(http, { operation: "CreateAssetUrl", status: "200" })).toBe(2);
    expect(gateway(http, { operation: "blobs", status: "200" })).toBe(2);
    expect(gateway(http, { operation: "unmatched", status: "404" })).toBe(1);
    expect(gateway(http, { operation: "ListAssistants", status: "401" })).toBe(1);
    expect(gateway("loom_rate_limit_refusals_total", { limit: "streams" })).toBe(1);
    expect(gateway("loom_events_delivered_total")).toBe(runEvents + 2);
    expect(openWhileHeld).toBe(1);
    await vi.waitFor(async () =>
      expect((await scrapeMetrics(stack.metricsUrls.gateway)).value("loom_sse_connections_open")).toBe(0),
    );
    // The gateway serves no RPCs: its Connect series are the services'.
    expect(after.gateway.value(rpc)).toBeUndefined();

    // Each service: its Connect calls by method and code.
    expect(
      growth(before.runs, after.runs, rpc, { method: "loom.runs.v1.RunsService/CreateAssistantRun", code: "ok" }),
    ).toBe(1);
    expect(
      growth(before.events, after.events, rpc, { method: "loom.events.v1.EventsService/AppendEvents", code: "ok" }),
    ).toBeGreaterThanOrEqual(4);
    expect(growth(before.identity, after.identity, rpc, { code: "ok" })).toBeGreaterThan(0);
    expect(
      growth(before.assistants, after.assistants, rpc, {
        method: "loom.assistants.v1.AssistantsService/CreateAssistant",
        code: "ok",
      }),
    ).toBe(1);
    expect(
      growth(before.storage, after.storage, rpc, {
        method: "loom.storage.v1.StorageService/CreateAssetUrl",
        code: "ok",
      }),
    ).toBe(2);
    expect(
      growth(before.tools, after.tools, rpc, { method: "loom.tools.v1.ToolsService/CreateTool", code: "ok" }),
    ).toBe(1);

    // Runs: every transition of the run, its wait in the queue, and nothing left executing or queued.
    const runs = (labels: Record<string, string>) =>
      growth(before.runs, after.runs, "loom_runs_transitions_total", labels);
    expect(runs({ from: "NONE", to: "QUEUED" })).toBe(1);
    expect(runs({ from: "QUEUED", to: "STARTING" })).toBe(1);
    expect(runs({ from: "STARTING", to: "RUNNING" })).toBe(1);
    expect(runs({ from: "RUNNING", to: "SUCCEEDED" })).toBe(1);
    expect(growth(before.runs, after.runs, "loom_runs_queue_wait_seconds_count")).toBe(1);
    expect(after.runs.value("loom_runs_queue_depth")).toBe(0);
    expect(after.runs.value("loom_runs_executing")).toBe(0);
    expect(after.runs.samples.filter((s) => s.name === "loom_runs_executing")).toHaveLength(16);

    // Events appended (the run's and the structure run's), blob bytes in and out.
    expect(growth(before.events, after.events, "loom_events_appended_total")).toBe(runEvents + 2);
    expect(growth(before.storage, after.storage, "loom_blob_received_bytes_total")).toBe(Buffer.byteLength(uploaded));
    expect(growth(before.storage, after.storage, "loom_blob_sent_bytes_total")).toBe(Buffer.byteLength(uploaded));
  });
});

/** The all-in-one process with METRICS_PORT, running a model the test holds: the gauges seen while runs execute and wait. */
describe("metrics of the all-in-one process", () => {
  const key = `loom_metrics-${randomBytes(24).toString("base64url")}`;
  let loom: AllInOne;
  let model: FakeOpenAI;
  let metricsUrl: string;
  let api: ApiClient;
  beforeAll(async () => {
    model = await startFakeOpenAI();
    loom = await startAllInOne({
      PORT: "0",
      METRICS_PORT: "0",
      BOOTSTRAP_API_KEY: key,
      STREAMS_PER_CREDENTIAL: "1",
      RUN_MAX_PER_ORGANIZATION: "1",
      RUN_MAX_QUEUED_PER_ORGANIZATION: "1",
      DEFAULT_MODEL: "openai-compatible:fake-model",
      OPENAI_COMPATIBLE_BASE_URL: model.baseUrl,
    });
    metricsUrl = /metrics at (http:\/\/\S+\/metrics)/.exec(loom.output())![1]!;
    api = apiClient(loom.url, key);
  }, 60_000);
  afterAll(async () => {
    await loom?.stop("SIGTERM");
    await model?.close();
  });

  it("serves /metrics on METRICS_PORT, apart from the API", async () => {
    expect(new URL(metricsUrl).port).not.toBe(new URL(loom.url).port);
    expect((await fetch(`${loom.url}/metrics`)).status).not.toBe(200);
    expectProcessMetrics(await scrapeMetrics(metricsUrl));
  });

  it("counts every service's series once, in one registry", async () => {
    const before = await scrapeMetrics(metricsUrl);
    const { runEvents } = await exercise(api, loom.url, key, async () => {
      expect((await scrapeMetrics(metricsUrl)).value("loom_sse_connections_open")).toBe(1);
    });
    const after = await scrapeMetrics(metricsUrl);
    expect(growth(before, after, http, { operation: "CreateAssistantRun", status: "201" })).toBe(1);
    expect(growth(before, after, http, { operation: "GetStructureRunEventsSSE", status: "429" })).toBe(1);
    expect(growth(before, after, "loom_rate_limit_refusals_total", { limit: "streams" })).toBe(1);
    // In one process the services are called in process, through the same interceptors.
    expect(growth(before, after, rpc, { method: "loom.runs.v1.RunsService/CreateAssistantRun", code: "ok" })).toBe(1);
    expect(growth(before, after, "loom_runs_transitions_total", { from: "RUNNING", to: "SUCCEEDED" })).toBe(1);
    expect(growth(before, after, "loom_events_appended_total")).toBe(runEvents + 2);
    expect(growth(before, after, "loom_events_delivered_total")).toBe(runEvents + 2);
    expect(growth(before, after, "loom_blob_received_bytes_total")).toBe(Buffer.byteLength(uploaded));
    expect(growth(before, after, "loom_blob_sent_bytes_total")).toBe(Buffer.byteLength(uploaded));
    // Every series once: a name with two HELP lines would mean a second registration.
    const text = await (await fetch(metricsUrl)).text();
    const helps = text.split("\n").filter((line) => line.startsWith("# HELP "));
    expect(new Set(helps).size).toBe(helps.length);
  });

  it("shows runs executing by organization bucket and the queue behind them", async () => {
    const organizationId = (await api.get("/users")).body.users[0].organizations[0] as string;
    const bucket = createHash("sha256").update(organizationId).digest("hex")[0]!;
    const held: Array<() => void> = [];
    model.reply((request, res) => held.push(() => answer("done")(request, res)));
    const assistantId = (await api.post("/assistants", { name: "held" })).body.assistant_id;
    const first = (await api.post(`/assistants/${assistantId}/runs`, { args: [] })).body.assistant_run_id;
    await vi.waitFor(() => expect(held).toHaveLength(1), { timeout: 10_000 });
    // RUN_MAX_PER_ORGANIZATION=1: the second run waits in the queue while the first holds the organization's slot.
    const second = (await api.post(`/assistants/${assistantId}/runs`, { args: [] })).body.assistant_run_id;
    // The queued run ages: the oldest age shows it (past a second, so its wait lands above the 1 s bucket).
    let busy!: Scrape;
    await vi.waitFor(
      async () => {
        busy = await scrapeMetrics(metricsUrl);
        expect(busy.value("loom_runs_queue_oldest_age_seconds")).toBeGreaterThanOrEqual(1);
      },
      { timeout: 10_000, interval: 100 },
    );
    expect(busy.value("loom_runs_executing", { organization_bucket: bucket })).toBe(1);
    expect(busy.value("loom_runs_executing")).toBe(1);
    expect(busy.value("loom_runs_queue_depth")).toBe(1);
    // RUN_MAX_QUEUED_PER_ORGANIZATION=1: a third run is refused, and counted by its limit.
    expect((await api.post(`/assistants/${assistantId}/runs`, { args: [] })).status).toBe(429);
    expect(
      growth(busy, await scrapeMetrics(metricsUrl), "loom_rate_limit_refusals_total", { limit: "queued_runs" }),
    ).toBe(1);

    model.reply(answer("done"));
    held.splice(0).forEach((release) => release());
    for (const runId of [first, second]) {
      await vi.waitFor(async () => expect((await api.get(`/assistant-runs/${runId}`)).body.status).toBe("SUCCEEDED"), {
        timeout: 10_000,
      });
    }
    const idle = await scrapeMetrics(metricsUrl);
    expect(idle.value("loom_runs_executing")).toBe(0);
    expect(idle.value("loom_runs_queue_depth")).toBe(0);
    expect(idle.value("loom_runs_queue_oldest_age_seconds")).toBe(0);
    // The second run waited at least as long as it was queued behind the first.
    expect(growth(busy, idle, "loom_runs_queue_wait_seconds_count")).toBe(1);
    expect(growth(busy, idle, "loom_runs_queue_wait_seconds_bucket", { le: "1" })).toBe(0);
  });
});
