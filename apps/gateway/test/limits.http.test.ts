import { metricsRegistry } from "@loom/telemetry/metrics";
import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { type ApiResponse, apiClient } from "@loom/testing/http";
import { openSse, type SseConnection } from "@loom/testing/sse";
import { signAccessToken } from "@loom/testing/tokens";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { errorBodySchema } from "../src/schemas.ts";

/** A credential of its own (a fresh user), so no test shares a counter with another. */
const freshCredential = () => signAccessToken({ sub: `limits-${crypto.randomUUID()}` });
const rateHeaders = (res: ApiResponse) => [...res.headers.keys()].filter((name) => name.startsWith("ratelimit"));

/** A series' value in this process's registry (the in-process gateway counts here), 0 while it has none. */
async function sampleOf(name: string, labels: Record<string, string>): Promise<number> {
  const metric = metricsRegistry.getSingleMetric(name.replace(/_count$/, ""));
  const values = (await metric!.get()).values as Array<{
    metricName?: string;
    labels: Record<string, string | number>;
    value: number;
  }>;
  const found = values.find(
    (v) => (v.metricName ?? name) === name && Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want),
  );
  return found?.value ?? 0;
}

function expectRateLimited(res: { status: number; headers: Headers }, body: unknown) {
  expect(res.status).toBe(429);
  const error = errorBodySchema.parse(body);
  expect(error.type).toBe("RateLimited");
  expect(error.errors[0]!.message).toMatch(/\S/);
  expect(error.request_id).toBe(res.headers.get("x-request-id"));
  expect(res.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
}

describe("rate limits are off by default", () => {
  let stack: TestStack;
  beforeAll(async () => void (stack = await startStack("sqlite", { memoryBus: true })));
  afterAll(() => stack?.close());

  it("a burst of 100 requests from one credential gets no 429 and no RateLimit headers", async () => {
    const client = apiClient(stack.gatewayUrl, await freshCredential());
    const answers = await Promise.all(Array.from({ length: 100 }, () => client.get("/users")));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    expect(answers.flatMap(rateHeaders)).toEqual([]);
  });
});

describe("rate limits per credential, when on", () => {
  let stack: TestStack;
  beforeAll(
    async () =>
      void (stack = await startStack("sqlite", {
        memoryBus: true,
        gateway: { RATE_LIMIT_REQUESTS: 5, RATE_LIMIT_WINDOW_SECONDS: 60 },
      })),
  );
  afterAll(() => stack?.close());

  it("every answer carries the draft-06 RateLimit headers, Remaining counting down", async () => {
    const client = apiClient(stack.gatewayUrl, await freshCredential());
    const answers: ApiResponse[] = [];
    for (let i = 0; i < 5; i++) answers.push(await client.get(i === 2 ? "/assistants/not-a-uuid" : "/users"));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 400, 200, 200]); // an error answer counts and carries them too
    for (const a of answers) {
      expect(a.headers.get("ratelimit-policy")).toBe("5;w=60");
      expect(a.headers.get("ratelimit-limit")).toBe("5");
      expect(Number(a.headers.get("ratelimit-reset"))).toBeGreaterThan(0);
      expect(Number(a.headers.get("ratelimit-reset"))).toBeLessThanOrEqual(60);
    }
    expect(answers.map((a) => a.headers.get("ratelimit-remaining"))).toEqual(["4", "3", "2", "1", "0"]);
  });

  it("over the limit: 429 RateLimited, Retry-After the limiter's wait, and the limit holds for streams too", async () => {
    const credential = await freshCredential();
    const client = apiClient(stack.gatewayUrl, credential);
    const refusals = () => sampleOf("loom_rate_limit_refusals_total", { limit: "requests" });
    const refusedListUsers = () =>
      sampleOf("loom_http_request_duration_seconds_count", { operation: "ListUsers", status: "429" });
    const [refusalsBefore, listUsersBefore] = [await refusals(), await refusedListUsers()];
    for (let i = 0; i < 5; i++) expect((await client.get("/users")).status).toBe(200);
    const over = await client.get("/users");
    expectRateLimited(over, over.body);
    // Counted by limit, and by the operation the request would have reached (refused before routing).
    expect((await refusals()) - refusalsBefore).toBe(1);
    expect((await refusedListUsers()) - listUsersBefore).toBe(1);
    // The window started with the first request: the wait is close to 60 s, not a fixed 1.
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(50);
    expect(Number(over.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    expect(over.headers.get("ratelimit-remaining")).toBe("0");
    const stream = await openSse(`${stack.gatewayUrl}/structure-runs/${crypto.randomUUID()}/events/stream`, {
      authorization: `Bearer ${credential}`,
    });
    expectRateLimited(stream, stream.errorBody);
  });

  it("counts per credential: another credential is not limited", async () => {
    const limited = apiClient(stack.gatewayUrl, await freshCredential());
    for (let i = 0; i < 6; i++) await limited.get("/users");
    expect((await limited.get("/users")).status).toBe(429);
    const other = await apiClient(stack.gatewayUrl, await freshCredential()).get("/users");
    expect(other.status).toBe(200);
    expect(other.headers.get("ratelimit-remaining")).toBe("4");
  });

  it("does not limit the probes, the API description, or requests without a valid credential", async () => {
    const anonymous = apiClient(stack.gatewayUrl);
    const bad = apiClient(stack.gatewayUrl, "loom_not-a-key-0123456789abcdefghijklmnopqrstuvwxyz");
    for (let i = 0; i < 8; i++) {
      for (const res of [
        await anonymous.get("/healthz"),
        await anonymous.get("/readyz"),
        await anonymous.get("/openapi.json"),
      ]) {
        expect(res.status).toBe(200);
        expect(rateHeaders(res)).toEqual([]);
      }
      const unauthorized = await bad.get("/users");
      expect(unauthorized.status).toBe(401);
      expect(rateHeaders(unauthorized)).toEqual([]);
    }
  });
});

describe("a rate-limited credential", () => {
  let stack: TestStack;
  beforeAll(
    async () =>
      void (stack = await startStack("sqlite", {
        memoryBus: true,
        gateway: { RATE_LIMIT_REQUESTS: 3, RATE_LIMIT_WINDOW_SECONDS: 1 },
      })),
  );
  afterAll(() => stack?.close());

  it("is served again once the window has passed, no later than Retry-After said", async () => {
    const client = apiClient(stack.gatewayUrl, await freshCredential());
    let over: ApiResponse | undefined;
    // Until refused: a window may turn over while the first ones are sent.
    for (let i = 0; i < 20 && !over; i++) {
      const res = await client.get("/users");
      if (res.status === 429) over = res;
    }
    expectRateLimited(over!, over!.body);
    const refusedAt = Date.now();
    const retryAfterMs = Number(over!.headers.get("retry-after")) * 1000;
    await vi.waitFor(async () => expect((await client.get("/users")).status).toBe(200), {
      timeout: retryAfterMs + 2_000,
      interval: 50,
    });
    expect(Date.now() - refusedAt).toBeLessThanOrEqual(retryAfterMs + 1_000); // slack for a busy machine
  });
});

describe("concurrent event streams per credential", () => {
  let stack: TestStack;
  let admin: ReturnType<typeof apiClient>;
  let auth: Record<string, string>;
  const cap = 3;
  beforeAll(async () => {
    stack = await startStack("sqlite", { memoryBus: true, gateway: { STREAMS_PER_CREDENTIAL: cap } });
    admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
    auth = { authorization: `Bearer ${stack.bootstrapKey}` };
  });
  afterAll(() => stack?.close());

  const subscribers = () => (stack.bus as unknown as { subscriberCount(): number }).subscriberCount();
  const liveRun = async () => {
    const runId = crypto.randomUUID();
    await admin.post(`/structure-runs/${runId}/events`, [{ type: "Open", timestamp: 1 }]);
    return { runId, url: `${stack.gatewayUrl}/structure-runs/${runId}/events/stream` };
  };
  const end = (runId: string) =>
    admin.post(`/structure-runs/${runId}/events`, [{ type: "StructureRunCompleted", timestamp: 2 }]);
  /** Opens a stream once a slot is free: a closed stream gives its slot back when the server sees it close. */
  const openWhenFree = async (url: string, headers = auth) => {
    let stream: SseConnection | undefined;
    await vi.waitFor(
      async () => {
        stream = await openSse(url, headers);
        expect(stream.status).toBe(200);
      },
      { timeout: 5_000, interval: 50 },
    );
    return stream!;
  };
  /** Every slot of the credential, each on a live run of its own (earlier tests' slots may still be closing). */
  const holdAll = async () => {
    const held: SseConnection[] = [];
    for (let i = 0; i < cap; i++) held.push(await openWhenFree((await liveRun()).url));
    return held;
  };

  it(`refuses stream ${cap + 1} of one credential with 429 and Retry-After, opening no upstream follow; another credential is unaffected`, async () => {
    const held = await holdAll();
    await Promise.all(held.map((s) => s.waitFor(1)));
    const before = subscribers();
    const refused = await openSse((await liveRun()).url, auth);
    expectRateLimited(refused, refused.errorBody);
    expect(subscribers()).toBe(before);
    // Another key of the same user is another credential.
    const adminUserId = (await admin.get("/users")).body.users[0].user_id;
    const otherKey = (await admin.post(`/users/${adminUserId}/api-keys`, { name: "second" })).body.value;
    const other = await openSse((await liveRun()).url, { authorization: `Bearer ${otherKey}` });
    expect(other.status).toBe(200);
    for (const s of [...held, other]) s.close();
    await Promise.all([...held, other].map((s) => s.ended));
  });

  it("gives the slot back when the client hangs up", async () => {
    const held = await holdAll();
    const { url } = await liveRun();
    expect((await openSse(url, auth)).status).toBe(429);
    held[0]!.close();
    const replacement = await openWhenFree(url);
    for (const s of [...held, replacement]) s.close();
    await Promise.all([...held, replacement].map((s) => s.ended));
  });

  it("gives the slots back when the server ends the streams", async () => {
    const runs = await Promise.all(Array.from({ length: cap }, liveRun));
    const held: SseConnection[] = [];
    for (const r of runs) held.push(await openWhenFree(r.url));
    expect((await openSse((await liveRun()).url, auth)).status).toBe(429);
    await Promise.all(runs.map((r) => end(r.runId)));
    await Promise.all(held.map((s) => s.ended));
    const fresh = await holdAll();
    for (const s of fresh) s.close();
    await Promise.all(fresh.map((s) => s.ended));
  });

  it("gives the slot back when the stream fails before streaming (unknown run)", async () => {
    const fresh = { authorization: `Bearer ${await freshCredential()}` };
    const unknown = () => openSse(`${stack.gatewayUrl}/assistant-runs/${crypto.randomUUID()}/events/stream`, fresh);
    for (let i = 0; i < cap * 3; i++) expect((await unknown()).status).toBe(404);
  });
});

/** Keys minted by one user do not multiply what their organization may do. */
describe("limits per organization, over all its credentials", () => {
  let stack: TestStack;
  let admin: ReturnType<typeof apiClient>;
  let userId: string;
  beforeAll(async () => {
    stack = await startStack("sqlite", {
      memoryBus: true,
      gateway: { RATE_LIMIT_ORGANIZATION_REQUESTS: 7, RATE_LIMIT_WINDOW_SECONDS: 60 },
    });
    admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
    userId = (await admin.get("/users")).body.users[0].user_id;
  });
  afterAll(() => stack?.close());

  /** A fresh key of the bootstrap organization (creating it is one of the organization's requests). */
  const mintKey = async () =>
    (await admin.post(`/users/${userId}/api-keys`, { name: "one more" })).body.value as string;

  it("counts every request of the organization's keys together: 429 with Retry-After past the quota; another organization is not limited", async () => {
    // Requests 1 to 3 (the admin key is one of the organization's credentials too): ListUsers, two CreateApiKey.
    const keys = [await mintKey(), await mintKey()];
    const answers: ApiResponse[] = [];
    for (let i = 0; i < 4; i++) answers.push(await apiClient(stack.gatewayUrl, keys[i % 2]).get("/users"));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(answers.map((a) => a.headers.get("ratelimit-remaining"))).toEqual(["3", "2", "1", "0"]);
    expect(answers[0]!.headers.get("ratelimit-policy")).toBe("7;w=60");
    const over = await admin.get("/users");
    expectRateLimited(over, over.body);
    expect(over.body.errors[0].message).toMatch(/organization/);
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(50);
    // A user of another organization (a token's first use provisions one) has its own count.
    expect((await apiClient(stack.gatewayUrl, await freshCredential()).get("/users")).status).toBe(200);
  });
});

describe("event streams per organization, over all its credentials", () => {
  let stack: TestStack;
  let admin: ReturnType<typeof apiClient>;
  beforeAll(async () => {
    stack = await startStack("sqlite", { memoryBus: true, gateway: { STREAMS_PER_ORGANIZATION: 2 } });
    admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
  });
  afterAll(() => stack?.close());

  const liveRun = async (client = admin) => {
    const runId = crypto.randomUUID();
    await client.post(`/structure-runs/${runId}/events`, [{ type: "Open", timestamp: 1 }]);
    return `${stack.gatewayUrl}/structure-runs/${runId}/events/stream`;
  };

  it("refuses the organization's stream 3 with 429 whichever key opens it, and frees the slot on close; another organization is unaffected", async () => {
    const userId = (await admin.get("/users")).body.users[0].user_id;
    const keys = await Promise.all(
      [1, 2, 3].map(
        async () => (await admin.post(`/users/${userId}/api-keys`, { name: "streamer" })).body.value as string,
      ),
    );
    const bearer = (credential: string) => ({ authorization: `Bearer ${credential}` });
    const held = [await openSse(await liveRun(), bearer(keys[0]!)), await openSse(await liveRun(), bearer(keys[1]!))];
    expect(held.map((s) => s.status)).toEqual([200, 200]);
    const refused = await openSse(await liveRun(), bearer(keys[2]!));
    expectRateLimited(refused, refused.errorBody);
    expect(JSON.stringify(refused.errorBody)).toMatch(/per organization/);
    const outsider = await freshCredential();
    const elsewhere = await openSse(await liveRun(apiClient(stack.gatewayUrl, outsider)), bearer(outsider));
    expect(elsewhere.status).toBe(200);
    held[0]!.close();
    await vi.waitFor(
      async () => {
        const again = await openSse(await liveRun(), bearer(keys[2]!));
        expect(again.status).toBe(200);
        held.push(again);
      },
      { timeout: 5_000, interval: 50 },
    );
    for (const s of [...held, elsewhere]) s.close();
  });
});
