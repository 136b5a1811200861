import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { laterThan } from "@loom/testing/clock";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { storeKinds } from "@loom/testing/servers";
import { signAccessToken } from "@loom/testing/tokens";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiKeyListSchema, apiKeySchema, createdApiKeySchema, userSchema } from "../src/schemas.ts";
import { expectError } from "./expect-error.ts";

describe.each(storeKinds("users and API keys over HTTP"))("users and API keys over HTTP (%s store)", (store) => {
  let stack: TestStack;
  let admin: ApiClient;
  let adminUserId: string;
  let orgId: string;
  // A second organization, provisioned by a first access token.
  let stranger: ApiClient;
  let strangerUserId: string;
  let strangerOrgId: string;

  beforeAll(async () => {
    stack = await startStack(store);
    admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
    const users = await admin.get("/users");
    adminUserId = users.body.users[0].user_id;
    orgId = users.body.users[0].organizations[0];
    stranger = apiClient(
      stack.gatewayUrl,
      await signAccessToken({ sub: "stranger", email: "stranger@example.com", name: "Stranger" }),
    );
    const strangerUsers = await stranger.get("/users");
    strangerUserId = strangerUsers.body.users[0].user_id;
    strangerOrgId = strangerUsers.body.users[0].organizations[0];
  });
  afterAll(() => stack?.close());

  describe("ListUsers", () => {
    it("lists the users of the caller's organization only", async () => {
      const res = await admin.get("/users");
      expect(res.status).toBe(200);
      expect(res.body.users).toHaveLength(1);
      const user = userSchema.parse(res.body.users[0]);
      expect(user.email).toBe("admin@example.com");
      expect(user.organizations).toEqual([orgId]);
      expect(res.body.users.map((u: { user_id: string }) => u.user_id)).not.toContain(strangerUserId);
    });

    it("provisions a token's user into a personal organization, with name and email from its claims", async () => {
      const res = await stranger.get("/users");
      expect(res.status).toBe(200);
      expect(res.body.users).toEqual([expect.objectContaining({ email: "stranger@example.com", name: "Stranger" })]);
      expect(strangerOrgId).not.toBe(orgId);
      // A second token for the same subject is the same user, not a new one.
      const again = await apiClient(stack.gatewayUrl, await signAccessToken({ sub: "stranger" })).get("/users");
      expect(again.body.users[0].user_id).toBe(strangerUserId);
    });

    it("is served under the /api alias too", async () => {
      const res = await admin.get("/api/users");
      expect(res.status).toBe(200);
      expect(res.body.users[0].user_id).toBe(adminUserId);
    });
  });

  describe("GetUser", () => {
    it("reads a user of the caller's organization as ListUsers lists it", async () => {
      const res = await admin.get(`/users/${adminUserId}`);
      expect(res.status).toBe(200);
      expect(userSchema.parse(res.body)).toEqual((await admin.get("/users")).body.users[0]);
      expect((await stranger.get(`/api/users/${strangerUserId.toUpperCase()}`)).body).toMatchObject({
        user_id: strangerUserId,
        email: "stranger@example.com",
        name: "Stranger",
        organizations: [strangerOrgId],
      });
    });

    it("answers 404 for another organization's user as for an unknown id, and 400 for an id that is not a uuid", async () => {
      expectError(await admin.get(`/users/${strangerUserId}`), 404, "NotFound");
      expectError(await stranger.get(`/users/${adminUserId}`), 404, "NotFound");
      expectError(await admin.get(`/users/${crypto.randomUUID()}`), 404, "NotFound");
      const bad = expectError(await admin.get("/users/me"), 400, "ValidationError");
      expect(bad.errors[0]?.path).toBe("path.user_id");
    });
  });

  describe("create, read, rename, delete", () => {
    it("creates a user key that works as a credential and returns its value only once", async () => {
      const created = await admin.post(`/users/${adminUserId}/api-keys`, { name: "ci" });
      expect(created.status).toBe(201);
      const key = createdApiKeySchema.parse(created.body);
      expect(key.value).toMatch(/^loom_[A-Za-z0-9_-]{43}$/);
      expect(key).toMatchObject({ name: "ci", active: true, organization_id: orgId, created_by: adminUserId });
      expect(key.last_used).toBe(key.created_at);

      const read = await admin.get(`/api-keys/${key.api_key_id}`);
      expect(read.status).toBe(200);
      expect(apiKeySchema.parse(read.body)).not.toHaveProperty("value");

      await laterThan(key.created_at); // so the first use is a later millisecond
      const asKey = await apiClient(stack.gatewayUrl, key.value).get("/users");
      expect(asKey.status).toBe(200);
      expect(asKey.body.users[0].user_id).toBe(adminUserId);
      // First use moves last_used past created_at.
      const afterUse = await admin.get(`/api-keys/${key.api_key_id}`);
      expect(Date.parse(afterUse.body.last_used)).toBeGreaterThan(Date.parse(key.created_at));
    });

    it("creates an organization key", async () => {
      const created = await admin.post(`/organizations/${orgId}/api-keys`, { name: "deploy" });
      expect(created.status).toBe(201);
      const key = createdApiKeySchema.parse(created.body);
      expect(key.organization_id).toBe(orgId);
      const listed = await admin.get(`/organizations/${orgId}/api-keys?page_size=100`);
      expect(listed.body.api_keys.map((k: { api_key_id: string }) => k.api_key_id)).toContain(key.api_key_id);
    });

    it("renames a key, and an empty PATCH changes nothing", async () => {
      const { body: key } = await admin.post(`/users/${adminUserId}/api-keys`, { name: "before" });
      await laterThan(key.updated_at);
      const renamed = await admin.patch(`/api-keys/${key.api_key_id}`, { name: "after" });
      expect(renamed.status).toBe(200);
      expect(apiKeySchema.parse(renamed.body).name).toBe("after");
      expect(Date.parse(renamed.body.updated_at)).toBeGreaterThan(Date.parse(key.updated_at));
      const unchanged = await admin.patch(`/api-keys/${key.api_key_id}`);
      expect(unchanged.status).toBe(200);
      expect(unchanged.body.name).toBe("after");
      expect((await admin.patch(`/api-keys/${key.api_key_id}`, { name: null })).body.name).toBe("after");
      expect((await admin.get(`/api-keys/${key.api_key_id}`)).body.name).toBe("after");
    });

    it("deletes a key: 204, it stops working at once, and it is gone", async () => {
      const { body: key } = await admin.post(`/users/${adminUserId}/api-keys`, { name: "short-lived" });
      const asKey = apiClient(stack.gatewayUrl, key.value);
      expect((await asKey.get("/users")).status).toBe(200);
      const deleted = await admin.delete(`/api-keys/${key.api_key_id}`);
      expect(deleted.status).toBe(204);
      expect(deleted.body).toBeUndefined();
      expectError(await asKey.get("/users"), 401, "Unauthorized");
      expectError(await admin.get(`/api-keys/${key.api_key_id}`), 404, "NotFound");
      expectError(await admin.delete(`/api-keys/${key.api_key_id}`), 404, "NotFound");
    });
  });

  describe("name bounds", () => {
    const name = (length: number) => "n".repeat(length);
    const cases = [
      { length: 0, ok: false },
      { length: 1, ok: true },
      { length: 200, ok: true },
      { length: 201, ok: false },
    ];
    for (const { length, ok } of cases) {
      it(`CreateApiKey and CreateOrganizationApiKey with a ${length}-character name: ${ok ? "201" : "400"}`, async () => {
        for (const path of [`/users/${adminUserId}/api-keys`, `/organizations/${orgId}/api-keys`]) {
          const res = await admin.post(path, { name: name(length) });
          if (ok) expect(res.status).toBe(201);
          else
            expect(expectError(res, 400, "ValidationError").errors).toEqual([
              { path: "body.name", message: expect.any(String) },
            ]);
        }
      });

      it(`UpdateApiKey with a ${length}-character name: ${ok ? "200" : "400, and the name stays"}`, async () => {
        const { body: key } = await admin.post(`/users/${adminUserId}/api-keys`, { name: "bounded" });
        const res = await admin.patch(`/api-keys/${key.api_key_id}`, { name: name(length) });
        if (ok) expect(res.status).toBe(200);
        else expectError(res, 400, "ValidationError");
        expect((await admin.get(`/api-keys/${key.api_key_id}`)).body.name).toBe(ok ? name(length) : "bounded");
      });
    }

    it("counts characters, not UTF-16 units: 200 emoji fit, 201 do not", async () => {
      expect((await admin.post(`/users/${adminUserId}/api-keys`, { name: "😀".repeat(200) })).status).toBe(201);
      expectError(
        await admin.post(`/users/${adminUserId}/api-keys`, { name: "😀".repeat(201) }),
        400,
        "ValidationError",
      );
    });
  });

  describe("bad input is a clear error and writes nothing", () => {
    const countUserKeys = async () =>
      (await admin.get(`/users/${adminUserId}/api-keys`)).body.pagination.total_count as number;

    it("rejects malformed JSON", async () => {
      const before = await countUserKeys();
      const body = expectError(
        await admin.post(`/users/${adminUserId}/api-keys`, '{"name": "x"'),
        400,
        "ValidationError",
      );
      expect(body.errors).toEqual([{ path: "body", message: "malformed JSON" }]);
      expect(await countUserKeys()).toBe(before);
    });

    it("rejects a body of whitespace alone (not JSON; no body at all is an empty patch) and changes nothing", async () => {
      const key = (await admin.post(`/users/${adminUserId}/api-keys`, { name: "kept" })).body;
      for (const blank of ["\n", " ", "\r\n\t"]) {
        const body = expectError(await admin.patch(`/api-keys/${key.api_key_id}`, blank), 400, "ValidationError");
        expect(body.errors).toEqual([{ path: "body", message: "malformed JSON" }]);
      }
      expect((await admin.patch(`/api-keys/${key.api_key_id}`)).status).toBe(200);
      expect((await admin.get(`/api-keys/${key.api_key_id}`)).body.name).toBe("kept");
    });

    it("rejects wrong types, naming the field", async () => {
      const before = await countUserKeys();
      for (const bad of [{ name: 42 }, { name: ["x"] }, { name: { first: "x" } }, { name: true }]) {
        const body = expectError(await admin.post(`/users/${adminUserId}/api-keys`, bad), 400, "ValidationError");
        expect(body.errors[0]?.path).toBe("body.name");
      }
      expectError(await admin.post(`/users/${adminUserId}/api-keys`, [1, 2]), 400, "ValidationError");
      expectError(await admin.post(`/users/${adminUserId}/api-keys`, '"just a string"'), 400, "ValidationError");
      expect(await countUserKeys()).toBe(before);
    });

    it("rejects a missing body or name where one is required", async () => {
      const before = await countUserKeys();
      expectError(await admin.post(`/users/${adminUserId}/api-keys`), 400, "ValidationError");
      expectError(await admin.post(`/users/${adminUserId}/api-keys`, {}), 400, "ValidationError");
      expectError(await admin.post(`/users/${adminUserId}/api-keys`, { name: null }), 400, "ValidationError");
      expect(await countUserKeys()).toBe(before);
    });

    it("ignores unknown fields", async () => {
      const res = await admin.post(`/users/${adminUserId}/api-keys`, { name: "extra", colour: "blue" });
      expect(res.status).toBe(201);
      expect(res.body).not.toHaveProperty("colour");
    });

    it("rejects a path id that is not a uuid", async () => {
      const body = expectError(await admin.get("/api-keys/not-a-uuid"), 400, "ValidationError");
      expect(body.errors[0]?.path).toBe("path.api_key_id");
      expectError(await admin.get("/api-keys/3f1c2d4e-5b6a-1c8d-9e0f-a1b2c3d4e5f6"), 400, "ValidationError"); // not version 4
    });

    it("rejects a body over 1 MiB with 413 and writes nothing", async () => {
      const before = await countUserKeys();
      expectError(
        await admin.post(`/users/${adminUserId}/api-keys`, { name: "x", pad: "x".repeat(1024 * 1024) }),
        413,
        "PayloadTooLarge",
      );
      expect(await countUserKeys()).toBe(before);
    });
  });

  describe("credentials", () => {
    it("401 without a credential, with a garbage one, or with a wrong scheme", async () => {
      expectError(await apiClient(stack.gatewayUrl).get("/users"), 401, "Unauthorized");
      expectError(await admin.as("garbage").get("/users"), 401, "Unauthorized");
      expectError(await admin.as("loom_" + "A".repeat(43)).get("/users"), 401, "Unauthorized");
      expectError(await admin.as("a.b.c").get("/users"), 401, "Unauthorized");
      expectError(
        await apiClient(stack.gatewayUrl).get("/users", { authorization: `Basic ${stack.bootstrapKey}` }),
        401,
        "Unauthorized",
      );
    });

    it("401 for an expired access token, or one signed with another secret", async () => {
      const expired = await signAccessToken({ sub: "late" }, { expiresIn: Math.floor(Date.now() / 1000) - 60 });
      expectError(await admin.as(expired).get("/users"), 401, "Unauthorized");
      const forged = await signAccessToken({ sub: "forger" }, { secret: "some-other-secret-that-is-long-enough-123" });
      expectError(await admin.as(forged).get("/users"), 401, "Unauthorized");
    });

    it("401 for an access token without an expiry, or one that expires further ahead than ACCESS_TOKEN_MAX_LIFETIME_SECONDS (a day)", async () => {
      const forever = await signAccessToken({ sub: "forever" }, { expiresIn: null });
      expect(expectError(await admin.as(forever).get("/users"), 401, "Unauthorized").errors[0]!.message).toMatch(
        /no expiry/,
      );
      const tooLong = await signAccessToken({ sub: "for-a-year" }, { expiresIn: "365d" });
      expect(expectError(await admin.as(tooLong).get("/users"), 401, "Unauthorized").errors[0]!.message).toMatch(
        /at most 86400 s ahead/,
      );
      const withinADay = await signAccessToken({ sub: "for-a-day" }, { expiresIn: "23h" });
      expect((await admin.as(withinADay).get("/users")).status).toBe(200);
    });

    it("401 on every route, before validation", async () => {
      const anonymous = apiClient(stack.gatewayUrl);
      expectError(await anonymous.post(`/users/${adminUserId}/api-keys`, { name: "x" }), 401, "Unauthorized");
      expectError(await anonymous.get("/api-keys/not-a-uuid"), 401, "Unauthorized");
      expectError(await anonymous.delete(`/api/api-keys/${adminUserId}`), 401, "Unauthorized");
    });
  });

  describe("organizations and users are isolated", () => {
    it("404 for another organization's key, and it stays untouched", async () => {
      const { body: key } = await admin.post(`/organizations/${orgId}/api-keys`, { name: "ours" });
      expectError(await stranger.get(`/api-keys/${key.api_key_id}`), 404, "NotFound");
      expectError(await stranger.patch(`/api-keys/${key.api_key_id}`, { name: "theirs" }), 404, "NotFound");
      expectError(await stranger.delete(`/api-keys/${key.api_key_id}`), 404, "NotFound");
      const read = await admin.get(`/api-keys/${key.api_key_id}`);
      expect(read.body.name).toBe("ours");
    });

    it("404 for another organization's key list and key creation", async () => {
      expectError(await stranger.get(`/organizations/${orgId}/api-keys`), 404, "NotFound");
      expectError(await stranger.post(`/organizations/${orgId}/api-keys`, { name: "sneaky" }), 404, "NotFound");
      const ours = await admin.get(`/organizations/${orgId}/api-keys?page_size=100`);
      expect(ours.body.api_keys.map((k: { name: string }) => k.name)).not.toContain("sneaky");
    });

    it("403 for another user's /users/{id}/api-keys", async () => {
      expectError(await admin.get(`/users/${strangerUserId}/api-keys`), 403, "Forbidden");
      expectError(await admin.post(`/users/${strangerUserId}/api-keys`, { name: "not mine" }), 403, "Forbidden");
      expectError(await stranger.get(`/users/${adminUserId}/api-keys`), 403, "Forbidden");
      const theirs = await stranger.get(`/users/${strangerUserId}/api-keys`);
      expect(theirs.status).toBe(200);
      expect(theirs.body.api_keys).toEqual([]);
    });

    it("a token user's own keys act for their organization", async () => {
      const created = await stranger.post(`/users/${strangerUserId}/api-keys`, { name: "mine" });
      expect(created.status).toBe(201);
      expect(created.body.organization_id).toBe(strangerOrgId);
      const asKey = apiClient(stack.gatewayUrl, created.body.value);
      expect((await asKey.get("/users")).body.users[0].user_id).toBe(strangerUserId);
      expectError(await asKey.get(`/organizations/${orgId}/api-keys`), 404, "NotFound");
    });
  });

  describe("paging", () => {
    let owner: ApiClient;
    let ownerId: string;
    const created: string[] = [];

    beforeAll(async () => {
      owner = apiClient(stack.gatewayUrl, await signAccessToken({ sub: `pager-${store}`, email: "pager@example.com" }));
      ownerId = (await owner.get("/users")).body.users[0].user_id;
      for (let i = 0; i < 5; i++)
        created.push((await owner.post(`/users/${ownerId}/api-keys`, { name: `k${i}` })).body.api_key_id);
    });

    it("pages newest first, stably, with next and previous pages", async () => {
      const first = await owner.get(`/users/${ownerId}/api-keys?page_size=2`);
      expect(apiKeyListSchema.parse(first.body).pagination).toEqual({
        page_number: 1,
        page_size: 2,
        total_count: 5,
        total_pages: 3,
        next_page: 2,
      });
      const second = await owner.get(`/users/${ownerId}/api-keys?page=2&page_size=2`);
      expect(second.body.pagination).toEqual({
        page_number: 2,
        page_size: 2,
        total_count: 5,
        total_pages: 3,
        next_page: 3,
        previous_page: 1,
      });
      const third = await owner.get(`/users/${ownerId}/api-keys?page=3&page_size=2`);
      expect(third.body.pagination).toEqual({
        page_number: 3,
        page_size: 2,
        total_count: 5,
        total_pages: 3,
        previous_page: 2,
      });
      const ids = [...first.body.api_keys, ...second.body.api_keys, ...third.body.api_keys].map(
        (k: { api_key_id: string }) => k.api_key_id,
      );
      expect(ids).toEqual([...created].reverse());
    });

    it("answers a page past the end with no items", async () => {
      const res = await owner.get(`/users/${ownerId}/api-keys?page=9&page_size=2`);
      expect(res.status).toBe(200);
      expect(res.body.api_keys).toEqual([]);
      expect(res.body.pagination).toEqual({ page_number: 9, page_size: 2, total_count: 5, total_pages: 3 });
    });

    it("defaults to page 1 of 20", async () => {
      const res = await owner.get(`/users/${ownerId}/api-keys`);
      expect(res.body.pagination).toEqual({ page_number: 1, page_size: 20, total_count: 5, total_pages: 1 });
    });

    it.each([
      ["page_size=0", "query.page_size"],
      ["page_size=101", "query.page_size"],
      ["page_size=abc", "query.page_size"],
      ["page_size=1.5", "query.page_size"],
      ["page=0", "query.page"],
      ["page=-1", "query.page"],
      ["page=1&page=2", "query.page"],
    ])("400 for %s", async (query, path) => {
      const body = expectError(await owner.get(`/users/${ownerId}/api-keys?${query}`), 400, "ValidationError");
      expect(body.errors[0]?.path).toBe(path);
    });

    it("accepts the bounds page_size=1 and page_size=100", async () => {
      expect((await owner.get(`/users/${ownerId}/api-keys?page_size=1`)).body.api_keys).toHaveLength(1);
      expect((await owner.get(`/users/${ownerId}/api-keys?page_size=100`)).body.api_keys).toHaveLength(5);
    });

    it("an empty list has zero pages", async () => {
      const res = await owner.get(
        `/organizations/${(await owner.get("/users")).body.users[0].organizations[0]}/api-keys`,
      );
      expect(res.body).toEqual({
        api_keys: [],
        pagination: { page_number: 1, page_size: 20, total_count: 0, total_pages: 0 },
      });
    });
  });

  describe("HTTP conventions", () => {
    it("echoes a sane X-Request-Id and replaces an insane one", async () => {
      expect((await admin.get("/users", { "x-request-id": "trace-123" })).headers.get("x-request-id")).toBe(
        "trace-123",
      );
      const replaced = (await admin.get("/users", { "x-request-id": "bad id with spaces" })).headers.get(
        "x-request-id",
      );
      expect(replaced).toMatch(/^[0-9a-f-]{36}$/);
    });

    it("answers unknown paths with 404 and wrong methods with 405 in the error shape", async () => {
      expectError(await admin.get("/nowhere"), 404, "NotFound");
      expectError(await admin.put("/users", {}), 405, "MethodNotAllowed");
    });

    it("serves /healthz and /readyz without credentials", async () => {
      const anonymous = apiClient(stack.gatewayUrl);
      expect((await anonymous.get("/healthz")).status).toBe(200);
      expect((await anonymous.get("/readyz")).status).toBe(200);
    });
  });
});
