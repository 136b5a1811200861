import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { storeKinds } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError } from "./expect-error.ts";

/** Minting keys is bounded: per user and per organization, checked by identity on its real store. */
describe.each(storeKinds("API key caps over HTTP"))("API key caps over HTTP (%s store)", (store) => {
  const perUser = 3;
  const perOrganization = 6;
  let stack: TestStack;
  let admin: ApiClient;
  let userId: string;
  let orgId: string;
  beforeAll(async () => {
    stack = await startStack(store, {
      identity: { API_KEYS_PER_USER: perUser, API_KEYS_PER_ORGANIZATION: perOrganization },
    });
    admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
    const user = (await admin.get("/users")).body.users[0];
    userId = user.user_id;
    orgId = user.organizations[0];
  });
  afterAll(() => stack?.close());

  const userKeys = async () => (await admin.get(`/users/${userId}/api-keys?page_size=100`)).body;
  const orgKeys = async () => (await admin.get(`/organizations/${orgId}/api-keys?page_size=100`)).body;

  it("refuses a user's key past API_KEYS_PER_USER with 429 and Retry-After naming the cap, stores nothing, and creates again once one is deleted", async () => {
    // Concurrent creates at the edge: never more than the cap, whatever the order.
    const answers = await Promise.all(
      Array.from({ length: perUser + 4 }, (_, i) => admin.post(`/users/${userId}/api-keys`, { name: `k${i}` })),
    );
    expect(answers.filter((a) => a.status === 201).length).toBeLessThanOrEqual(perUser);
    for (const refused of answers.filter((a) => a.status !== 201)) expect(refused.status).toBe(429);
    // Fill up to the cap one by one (concurrent refusals may have left room).
    while ((await userKeys()).pagination.total_count < perUser)
      expect((await admin.post(`/users/${userId}/api-keys`, { name: "fill" })).status).toBe(201);
    const over = await admin.post(`/users/${userId}/api-keys`, { name: "one too many" });
    const error = expectError(over, 429, "RateLimited");
    expect(over.headers.get("retry-after")).toBe("60");
    expect(error.errors[0]!.message).toMatch(/at most 3 API keys/);
    const keys = await userKeys();
    expect(keys.pagination.total_count).toBe(perUser);
    expect(keys.api_keys.map((k: { name: string }) => k.name)).not.toContain("one too many");

    expect((await admin.delete(`/api-keys/${keys.api_keys[0].api_key_id}`)).status).toBe(204);
    expect((await admin.post(`/users/${userId}/api-keys`, { name: "room again" })).status).toBe(201);
  });

  it("refuses any key past API_KEYS_PER_ORGANIZATION, user and organization keys counted together", async () => {
    // The user holds `perUser` keys; the bootstrap key is an organization key.
    while ((await orgKeys()).pagination.total_count + perUser < perOrganization) {
      expect((await admin.post(`/organizations/${orgId}/api-keys`, { name: "org" })).status).toBe(201);
    }
    const over = await admin.post(`/organizations/${orgId}/api-keys`, { name: "one too many" });
    expect(expectError(over, 429, "RateLimited").errors[0]!.message).toMatch(
      /organization may have at most 6 API keys/,
    );
    expect((await orgKeys()).pagination.total_count + (await userKeys()).pagination.total_count).toBe(perOrganization);
  });
});
