import { Writable } from "node:stream";
import { createLogger } from "@loom/telemetry/logger";
import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { laterThan } from "@loom/testing/clock";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { storeKinds } from "@loom/testing/servers";
import { signAccessToken } from "@loom/testing/tokens";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { secretListSchema, secretSchema } from "../src/schemas.ts";
import { expectError } from "./expect-error.ts";
import { organizationClients } from "./organization-clients.ts";

const uuid = () => crypto.randomUUID();

/** The keys griptape-cloud-client 0.2.0's SecretDetail.from_dict pops without a default: exactly these, no `value`. */
const clientKeys = ["created_at", "last_used", "name", "organization_id", "secret_id", "updated_at"];

/** Every value a test sends: none may come back in an answer or reach a log line. */
const sentValues: string[] = [];
const aValue = () => {
  const value = `sv-${uuid()}`;
  sentValues.push(value);
  return value;
};

/** A client that keeps the text of every answer it gets. */
function recording(client: ApiClient, answers: string[]): ApiClient {
  const keep = <F extends (...args: any[]) => Promise<{ body: unknown }>>(call: F): F =>
    (async (...args: Parameters<F>) => {
      const res = await call(...args);
      answers.push(JSON.stringify(res.body ?? null));
      return res;
    }) as F;
  return {
    ...client,
    get: keep(client.get),
    post: keep(client.post),
    patch: keep(client.patch),
    delete: keep(client.delete),
  };
}

describe.each(storeKinds("secrets over HTTP"))("secrets over HTTP (%s store)", (store) => {
  let stack: TestStack;
  let admin: ApiClient;
  let stranger: ApiClient;
  let orgId: string;
  const answers: string[] = [];
  // Every line every service and the gateway write, at the most detailed level.
  let logged = "";
  const logger = createLogger("test", "trace", {
    format: "json",
    destination: new Writable({ write: (chunk: Buffer, _encoding, done) => ((logged += chunk.toString()), done()) }),
  });

  beforeAll(async () => {
    stack = await startStack(store, { logger });
    const clients = await organizationClients(stack, `secret-stranger-${store}`);
    admin = recording(clients.admin, answers);
    stranger = recording(clients.stranger, answers);
    orgId = clients.orgId;
  });
  afterAll(() => stack?.close());

  const countSecrets = async () => (await admin.get("/secrets")).body.pagination.total_count as number;

  describe("CreateSecret", () => {
    it("answers 201 in SecretDetail's shape, without the value; last_used starts at created_at", async () => {
      const res = await admin.post("/api/secrets", { name: "OPENAI_API_KEY", value: aValue() });
      expect(res.status).toBe(201);
      const s = secretSchema.parse(res.body);
      expect(s).toMatchObject({ name: "OPENAI_API_KEY", organization_id: orgId });
      expect(Object.keys(res.body).sort()).toEqual(clientKeys);
      expect(s.last_used).toBe(s.created_at);
      expect(s.updated_at).toBe(s.created_at);
    });

    it("takes a value of 65536 bytes and any characters", async () => {
      const value = `${aValue()}\n€ "quoted" \\ ${"x".repeat(65_536 - 60)}`;
      sentValues.push(value);
      expect(Buffer.byteLength(value)).toBeLessThanOrEqual(65_536);
      expect((await admin.post("/secrets", { name: "big", value })).status).toBe(201);
    });

    it.each([
      ["body.name", () => ({ value: aValue() })],
      ["body.name", () => ({ name: "", value: aValue() })],
      ["body.name", () => ({ name: "x".repeat(201), value: aValue() })],
      ["body.name", () => ({ name: "bad\u0007name", value: aValue() })],
      ["body.value", () => ({ name: "n" })],
      ["body.value", () => ({ name: "n", value: "" })],
      ["body.value", () => ({ name: "n", value: 12345 })],
      // 66000 bytes in 22000 characters: the gateway's character bound lets it through, the service's byte bound does not.
      ["body.value", () => ({ name: "n", value: `${aValue()}${"€".repeat(22_000)}` })],
      ["body.value", () => ({ name: "n", value: "x".repeat(65_537) })],
    ])("400 naming %s (case %#), without the value, and nothing is written", async (path, fields) => {
      const before = await countSecrets();
      const res = await admin.post("/secrets", fields());
      const body = expectError(res, 400, "ValidationError");
      expect(body.errors.map((e) => e.path)).toContain(path);
      expect(await countSecrets()).toBe(before);
    });
  });

  describe("Get, Update, Delete", () => {
    let secretId: string;
    beforeAll(async () => {
      secretId = (await admin.post("/secrets", { name: "Editable", value: aValue() })).body.secret_id;
    });

    it("gets one secret, without its value", async () => {
      const res = await admin.get(`/secrets/${secretId}`);
      expect(res.status).toBe(200);
      expect(secretSchema.parse(res.body)).toMatchObject({ secret_id: secretId, name: "Editable" });
    });

    it("updates the name, the value or both; updated_at moves, last_used does not", async () => {
      const before = (await admin.get(`/secrets/${secretId}`)).body;
      await laterThan(before.updated_at);
      const renamed = await admin.patch(`/secrets/${secretId}`, { name: "Renamed" });
      expect(renamed.status).toBe(200);
      expect(secretSchema.parse(renamed.body)).toMatchObject({ name: "Renamed", last_used: before.last_used });
      expect(Date.parse(renamed.body.updated_at)).toBeGreaterThan(Date.parse(before.updated_at));
      const revalued = await admin.patch(`/api/secrets/${secretId}`, { value: aValue() });
      expect(Object.keys(revalued.body).sort()).toEqual(clientKeys);
      const both = await admin.patch(`/secrets/${secretId}`, { name: "Both", value: aValue() });
      expect(both.body).toMatchObject({ name: "Both", created_at: before.created_at, last_used: before.last_used });
      expect((await admin.get(`/secrets/${secretId}`)).body).toEqual(both.body);
    });

    it("an empty or absent update body changes nothing", async () => {
      const before = (await admin.get(`/secrets/${secretId}`)).body;
      expect((await admin.patch(`/secrets/${secretId}`)).body).toEqual(before);
      expect((await admin.patch(`/secrets/${secretId}`, {})).body).toEqual(before);
    });

    it.each([
      ["body.name", () => ({ name: "", value: aValue() })],
      ["body.value", () => ({ name: "ok", value: "" })],
      ["body.value", () => ({ value: `${aValue()}${"€".repeat(22_000)}` })],
    ])("a rejected update (%s) changes nothing and does not repeat the value", async (path, fields) => {
      const before = (await admin.get(`/secrets/${secretId}`)).body;
      const res = await admin.patch(`/secrets/${secretId}`, fields());
      expect(expectError(res, 400, "ValidationError").errors.map((e) => e.path)).toEqual([path]);
      expect((await admin.get(`/secrets/${secretId}`)).body).toEqual(before);
    });

    it("404 for another organization's secret, which stays untouched", async () => {
      expectError(await stranger.get(`/secrets/${secretId}`), 404, "NotFound");
      expectError(await stranger.patch(`/secrets/${secretId}`, { value: aValue() }), 404, "NotFound");
      expectError(await stranger.delete(`/secrets/${secretId}`), 404, "NotFound");
      expect((await admin.get(`/secrets/${secretId}`)).body.name).toBe("Both");
      expect((await stranger.get("/secrets")).body.secrets).toEqual([]);
    });

    it("404 for an unknown id, 400 for a malformed one", async () => {
      expectError(await admin.get(`/secrets/${uuid()}`), 404, "NotFound");
      expectError(await admin.patch(`/secrets/${uuid()}`, { name: "x" }), 404, "NotFound");
      expectError(await admin.delete(`/secrets/${uuid()}`), 404, "NotFound");
      expect(expectError(await admin.get("/secrets/123"), 400, "ValidationError").errors[0]?.path).toBe(
        "path.secret_id",
      );
    });

    it("deletes with 204 and no body; the secret is gone", async () => {
      const id = (await admin.post("/secrets", { name: "Doomed", value: aValue() })).body.secret_id;
      const res = await admin.delete(`/api/secrets/${id}`);
      expect(res.status).toBe(204);
      expect(res.body).toBeUndefined();
      expectError(await admin.get(`/secrets/${id}`), 404, "NotFound");
      expectError(await admin.delete(`/secrets/${id}`), 404, "NotFound");
    });
  });

  describe("ListSecrets", () => {
    let lister: ApiClient;
    const made: string[] = [];
    beforeAll(async () => {
      lister = recording(
        apiClient(stack.gatewayUrl, await signAccessToken({ sub: `secret-lister-${store}` })),
        answers,
      );
      for (let i = 0; i < 3; i++)
        made.push((await lister.post("/secrets", { name: `s${i}`, value: aValue() })).body.secret_id);
    });

    it("pages newest first, each without its value", async () => {
      const first = await lister.get("/secrets?page_size=2");
      expect(secretListSchema.parse(first.body).pagination).toEqual({
        page_number: 1,
        page_size: 2,
        total_count: 3,
        total_pages: 2,
        next_page: 2,
      });
      const second = await lister.get("/api/secrets?page=2.0&page_size=2");
      expect(second.body.pagination).toMatchObject({ page_number: 2, previous_page: 1 });
      expect([...first.body.secrets, ...second.body.secrets].map((s: { secret_id: string }) => s.secret_id)).toEqual(
        [...made].reverse(),
      );
      for (const s of first.body.secrets) expect(Object.keys(s).sort()).toEqual(clientKeys);
    });

    it.each(["page_size=0", "page_size=101", "page=0", "page=x"])("400 for %s", async (query) => {
      expectError(await lister.get(`/secrets?${query}`), 400, "ValidationError");
    });
  });

  // Last: everything above has been answered and logged.
  it("never gives a value back, in an answer or an error body, nor writes one to a log line", () => {
    expect(answers.length).toBeGreaterThan(40);
    // The lines exist and cover the secrets calls (each RPC is logged at debug level or finer).
    expect(logged).toContain("CreateSecret");
    for (const value of sentValues) {
      const head = value.slice(0, 39);
      for (const answer of answers) expect(answer).not.toContain(head);
      expect(logged).not.toContain(head);
    }
  });
});
