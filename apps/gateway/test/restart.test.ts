import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { apiClient } from "@loom/testing/http";
import { needs } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

describe.skipIf(!needs("MONGODB_URL", "identity survives a restart"))("identity on MongoDB survives a restart", () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack("mongo");
  });
  afterAll(() => stack?.close());

  it("keeps users, keys and renames; deleted keys stay deleted; no second bootstrap", async () => {
    const admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
    const userId = (await admin.get("/users")).body.users[0].user_id;
    const kept = (await admin.post(`/users/${userId}/api-keys`, { name: "kept" })).body;
    const renamed = (await admin.post(`/users/${userId}/api-keys`, { name: "old name" })).body;
    await admin.patch(`/api-keys/${renamed.api_key_id}`, { name: "new name" });
    const deleted = (await admin.post(`/users/${userId}/api-keys`, { name: "deleted" })).body;
    await admin.delete(`/api-keys/${deleted.api_key_id}`);
    const before = (await admin.get(`/users/${userId}/api-keys`)).body;

    await stack.restartService("identity");

    expect((await admin.get("/users")).body.users.map((u: { user_id: string }) => u.user_id)).toEqual([userId]);
    expect((await admin.get(`/users/${userId}/api-keys`)).body).toEqual(before);
    expect((await apiClient(stack.gatewayUrl, kept.value).get("/users")).status).toBe(200);
    expect((await admin.get(`/api-keys/${renamed.api_key_id}`)).body.name).toBe("new name");
    expect((await apiClient(stack.gatewayUrl, deleted.value).get("/users")).status).toBe(401);
  });
});
