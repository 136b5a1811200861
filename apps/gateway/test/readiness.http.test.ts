import { serviceNames } from "@loom/services/registry";
import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { apiClient } from "@loom/testing/http";
import { testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError } from "./expect-error.ts";

/**
 * One backing service down must not take the gateway out of rotation (every
 * replica would go with it): the gateway stays ready, says which service is
 * down, and only that service's requests answer 503.
 */
describe("readiness when a backing service is down", () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack("sqlite");
  });
  afterAll(() => stack?.close());

  it("stays ready, reports the service, and answers that service's requests with 503 and Retry-After", async () => {
    const anonymous = apiClient(stack.gatewayUrl);
    const admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
    expect((await anonymous.get("/readyz")).body).toEqual({
      status: "ready",
      services: Object.fromEntries(serviceNames.map((name) => [name, "ready"])),
      // The replica's own NATS connection, when it has one.
      ...(testServers.natsUrl ? { bus: "connected" } : {}),
    });

    await stack.stopService("assistants");

    const readyz = await anonymous.get("/readyz");
    expect(readyz.status).toBe(200);
    expect(readyz.body.services).toEqual(
      Object.fromEntries(serviceNames.map((name) => [name, name === "assistants" ? "unavailable" : "ready"])),
    );
    const down = await admin.get("/assistants");
    expectError(down, 503, "Unavailable");
    expect(Number(down.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await admin.get("/users")).status).toBe(200); // the rest still works
  });

  it("says which service is unavailable, never where it lives: from the gateway's call, and from a call between services", async () => {
    const admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
    // Assistants stopped for real by the test above: connections to its port are refused.
    const fromGateway = await admin.get("/assistants");
    const fromRuns = await admin.post(`/assistants/${crypto.randomUUID()}/runs`, {}); // runs asks assistants for the assistant
    for (const down of [fromGateway, fromRuns]) {
      expect(expectError(down, 503, "Unavailable").errors).toEqual([
        { message: "the assistants service is unavailable, try again later" },
      ]);
      expect(JSON.stringify(down.body)).not.toMatch(/ECONN|127\.0\.0\.1|localhost|:\d{2,5}\b/);
    }
  });
});
