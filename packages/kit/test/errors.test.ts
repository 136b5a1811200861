import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { IdentityService } from "@loom/proto/identity/v1/identity_pb";
import { createLogger } from "../src/logger.ts";
import { startRpcServer, type RunningServer } from "../src/rpc-server.ts";
import { httpTransport } from "../src/transports.ts";

/** A service whose handlers fail the ways real ones can, served over real HTTP. */
describe("errors leave a service sanitized", () => {
  let server: RunningServer;
  const token = "kit-test-token-0123456789";
  beforeAll(async () => {
    server = await startRpcServer({
      serviceToken: token,
      logger: createLogger("test", "silent"),
      services: [
        {
          name: "failing",
          routes: (router) =>
            router.service(IdentityService, {
              authenticate: async (req) => {
                if (req.credential === "driver") throw new Error("E11000 duplicate key error collection: loom.api_keys secretHash_1");
                if (req.credential === "down") throw Object.assign(new Error("connect ECONNREFUSED 10.0.0.7:27017"), { name: "MongoServerSelectionError" });
                throw new ConnectError("bad credential", Code.Unauthenticated);
              },
            }),
          ready: async () => true,
          close: async () => {},
        },
      ],
    });
  });
  afterAll(() => server?.close());

  const client = (t = token) => createClient(IdentityService, httpTransport(server.url, t));
  const failure = (call: Promise<unknown>) =>
    call.then(
      () => {
        throw new Error("expected the call to fail");
      },
      (e: unknown) => ConnectError.from(e),
    );

  it("turns an unexpected error into INTERNAL without its message", async () => {
    const error = await failure(client().authenticate({ credential: "driver" }));
    expect(error).toMatchObject({ code: Code.Internal, rawMessage: "internal error" });
  });

  it("turns an unreachable database into UNAVAILABLE without its address", async () => {
    const error = await failure(client().authenticate({ credential: "down" }));
    expect(error.code).toBe(Code.Unavailable);
    expect(error.rawMessage).not.toMatch(/10\.0\.0\.7|ECONNREFUSED/);
  });

  it("passes deliberate errors through as they are", async () => {
    const error = await failure(client().authenticate({ credential: "x" }));
    expect(error).toMatchObject({ code: Code.Unauthenticated, rawMessage: "bad credential" });
  });

  it("refuses calls without the shared service token", async () => {
    const error = await failure(client("wrong-token-0123456789").authenticate({ credential: "x" }));
    expect(error.code).toBe(Code.Unauthenticated);
    expect(error.rawMessage).toMatch(/service token/);
  });

  it("answers /healthz and /readyz", async () => {
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  });
});
