import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import { IdentityService } from "@loom/proto/identity/v1/identity_pb";
import { listen, type RunningServer } from "@loom/server/rpc-server";
import { createHttpServer } from "@loom/server/turn-batched-response";
import { createLogger } from "@loom/telemetry/logger";
import { apiClient } from "@loom/testing/http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../src/app.ts";
import { oneTransport, serviceClients } from "../src/clients.ts";
import { expectError } from "./expect-error.ts";
import { noBlobs } from "./no-blobs.ts";

/** The gateway's one mapping table, driven by an identity double that fails on demand. */
describe("RPC errors become the HTTP errors of docs/behaviour.md §2", () => {
  let gateway: RunningServer;
  beforeAll(async () => {
    const identity = createRouterTransport((router) =>
      router.service(IdentityService, {
        authenticate: async ({ credential }) => {
          const [kind, retryAfter] = credential.split("-");
          if (kind === "wait")
            throw new ConnectError("queue full", Code.ResourceExhausted, { "retry-after": retryAfter! });
          if (kind === "raw") throw new Error("MongoServerError: E11000 at /srv/app/node_modules/mongodb/lib/x.js:1:2");
          const code = Code[kind as keyof typeof Code];
          throw new ConnectError(`failed with ${kind}`, code);
        },
      }),
    );
    const { app } = buildApp({
      clients: serviceClients(oneTransport(identity)),
      blobs: noBlobs,
      logger: createLogger("test", "silent"),
      readiness: async () => ({ ready: false }),
    });
    gateway = await listen(createHttpServer(app.callback()), 0, "127.0.0.1");
  });
  afterAll(() => gateway?.close());

  it.each([
    ["InvalidArgument", 400, "ValidationError"],
    ["Unauthenticated", 401, "Unauthorized"],
    ["PermissionDenied", 403, "Forbidden"],
    ["NotFound", 404, "NotFound"],
    ["AlreadyExists", 409, "Conflict"],
    ["FailedPrecondition", 409, "Conflict"],
    ["ResourceExhausted", 429, "RateLimited"],
    ["Unavailable", 503, "Unavailable"],
    ["Internal", 500, "ServiceError"],
    ["Unknown", 500, "ServiceError"],
  ])("%s → %i %s", async (code, status, type) => {
    const res = await apiClient(gateway.url, `${code}-x`).get("/users");
    expect(res.status).toBe(status);
    expect(res.body.type).toBe(type);
    if (status === 429 || status === 503) expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    if (status === 500) expect(res.body.errors).toEqual([{ message: "internal error" }]);
  });

  it("uses the wait an error carries as Retry-After, and the table's default for none or nonsense", async () => {
    const retryAfter = async (credential: string) =>
      (await apiClient(gateway.url, credential).get("/users")).headers.get("retry-after");
    expect(await retryAfter("wait-7")).toBe("7");
    expect(await retryAfter("wait-soon")).toBe("1");
    expect(await retryAfter("ResourceExhausted-x")).toBe("1");
  });

  it("never leaks a driver message or a stack", async () => {
    const res = await apiClient(gateway.url, "raw-x").get("/users");
    expect(res.status).toBe(500);
    expect(JSON.stringify(res.body)).not.toMatch(/Mongo|E11000|node_modules/);
  });

  it("answers /readyz with 503, the error body and Retry-After while the process cannot serve", async () => {
    const res = await apiClient(gateway.url).get("/readyz");
    expectError(res, 503, "Unavailable");
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
  });
});
