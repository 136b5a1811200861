import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient } from "@loom/testing/http";
import { startStack, type TestStack } from "./stack.ts";

/** A key deleted through one gateway stops working on every other at once, despite their caches. */
describe("revocation across gateway replicas", () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack("sqlite");
  });
  afterAll(() => stack?.close());

  it("rejects a deleted key on a replica that had it cached", async () => {
    const other = await stack.addGateway();
    const admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
    const userId = (await admin.get("/users")).body.users[0].user_id;
    const key = (await admin.post(`/users/${userId}/api-keys`, { name: "revoked soon" })).body;
    const onOther = apiClient(other, key.value);
    expect((await onOther.get("/users")).status).toBe(200); // now cached on the other replica
    expect((await onOther.get("/users")).status).toBe(200);

    expect((await admin.delete(`/api-keys/${key.api_key_id}`)).status).toBe(204);
    // The replica that served the DELETE drops it synchronously.
    expect((await apiClient(stack.gatewayUrl, key.value).get("/users")).status).toBe(401);
    // The other learns it over the bus: within milliseconds, well under the cache time.
    const deadline = Date.now() + 2_000;
    let status = 200;
    while (Date.now() < deadline && status !== 401) {
      status = (await onOther.get("/users")).status;
      if (status !== 401) await new Promise((r) => setTimeout(r, 10));
    }
    expect(status).toBe(401);
  });
});
