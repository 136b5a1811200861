import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, createClient, createContextValues, type Transport } from "@connectrpc/connect";
import { compressionGzip, createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { EventsService, RunKind } from "@loom/proto/events/v1/events_pb";
import { IdentityService } from "@loom/proto/identity/v1/identity_pb";
import { createLogger } from "@loom/telemetry/logger";
import { MongoServerSelectionError } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { directTransport } from "../src/in-process-transport.ts";
import { headersFor, principalHeaders, requirePrincipal } from "../src/principal.ts";
import { type RunningServer, startRpcServer } from "../src/rpc-server.ts";
import type { RpcService } from "../src/rpc-service.ts";
import { httpTransport, inProcessTransport, serverInterceptors } from "../src/transports.ts";

const token = "kit-test-token-0123456789";
const logger = createLogger("test", "silent");

/** What the streaming implementation saw, so tests can check it was stopped. */
const followed = { started: 0, stopped: 0, signalAborted: 0 };
/** Unary calls whose implementation was told its caller went away. */
const unary = { abandoned: 0 };

/** A service whose handlers answer, stream and fail the ways real ones can. */
const testService: RpcService = {
  name: "test",
  routes: (router) => {
    router.service(IdentityService, {
      authenticate: async (req, ctx) => {
        if (req.credential === "driver")
          throw new Error("E11000 duplicate key error collection: loom.api_keys secretHash_1");
        // What the MongoDB driver throws when no server answers (its own class, with the address in the message).
        if (req.credential === "down")
          throw new MongoServerSelectionError("connect ECONNREFUSED 10.0.0.7:27017", {} as never);
        if (req.credential === "who") return { principal: requirePrincipal(ctx) };
        if (req.credential === "slow") {
          ctx.signal.addEventListener("abort", () => unary.abandoned++);
          return new Promise<never>(() => {});
        }
        throw new ConnectError("bad credential", Code.Unauthenticated);
      },
    });
    router.service(EventsService, {
      async *followEvents(req, ctx) {
        if (req.runId === "who") {
          yield { kind: { case: "event", value: { runId: requirePrincipal(ctx).userId } } };
          return;
        }
        if (req.runId === "driver") throw new Error("E11000 duplicate key error collection: loom.events id_1");
        followed.started++;
        ctx.signal.addEventListener("abort", () => followed.signalAborted++);
        try {
          for (let offset = req.fromOffset; offset < req.fromOffset + 3n; offset++) {
            yield { kind: { case: "event", value: { runId: req.runId, runKind: req.runKind, offset } } };
          }
          // Like the real follow: waits for more until its call is cancelled.
          if (req.runId === "endless") await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
        } finally {
          followed.stopped++;
        }
      },
    });
  },
  ready: async () => true,
  close: async () => {},
};

const failure = (call: Promise<unknown>) =>
  call.then(
    () => {
      throw new Error("expected the call to fail");
    },
    (e: unknown) => ConnectError.from(e),
  );

const until = async (check: () => boolean) => {
  for (let i = 0; i < 100 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(check()).toBe(true);
};

/** Every way services are called — over HTTP and inside one process — behaves the same. */
describe.each(["http", "in-process"] as const)("calls over the %s transport", (kind) => {
  let server: RunningServer | undefined;
  let transport: (serviceToken: string) => Transport;
  beforeAll(async () => {
    if (kind === "http") {
      server = await startRpcServer({ serviceToken: token, logger, services: [testService] });
      transport = (t) => httpTransport(server!.url, t);
    } else {
      // The caller's token is the transport's; the server side checks the one it was given.
      transport = (t) => inProcessTransport([testService], t, logger);
    }
  });
  afterAll(() => server?.close());

  const identity = (t = token) => createClient(IdentityService, transport(t));
  const events = () => createClient(EventsService, transport(token));

  it("carries the principal to the implementation", async () => {
    const answer = await identity().authenticate(
      { credential: "who" },
      { headers: headersFor({ userId: "u1", organizationId: "o1" }) },
    );
    expect(answer.principal).toMatchObject({ userId: "u1", organizationId: "o1" });
  });

  it("starts every call from fresh context values: a principal does not carry over to a call without one", async () => {
    const shared = createContextValues();
    await identity().authenticate(
      { credential: "who" },
      { headers: headersFor({ userId: "u1", organizationId: "o1" }), contextValues: shared },
    );
    const error = await failure(identity().authenticate({ credential: "who" }, { contextValues: shared }));
    expect(error.code).toBe(Code.Unauthenticated);
  });

  it("turns an unexpected error into INTERNAL without its message", async () => {
    const error = await failure(identity().authenticate({ credential: "driver" }));
    expect(error).toMatchObject({ code: Code.Internal, rawMessage: "internal error" });
  });

  it("turns an unreachable database into UNAVAILABLE without its address", async () => {
    const error = await failure(identity().authenticate({ credential: "down" }));
    expect(error.code).toBe(Code.Unavailable);
    expect(error.rawMessage).not.toMatch(/10\.0\.0\.7|ECONNREFUSED/);
  });

  it("passes deliberate errors through as they are", async () => {
    const error = await failure(identity().authenticate({ credential: "x" }));
    expect(error).toMatchObject({ code: Code.Unauthenticated, rawMessage: "bad credential" });
  });

  it("refuses calls without the shared service token", async () => {
    // In process the transport stamps the token its services check, so the mismatch is built by hand.
    const wrong =
      kind === "http"
        ? transport("wrong-token-0123456789")
        : directTransport([testService], "wrong-token-0123456789", serverInterceptors(token, logger));
    const error = await failure(createClient(IdentityService, wrong).authenticate({ credential: "x" }));
    expect(error.code).toBe(Code.Unauthenticated);
    expect(error.rawMessage).toMatch(/service token/);
    const follow = createClient(EventsService, wrong).followEvents({ runKind: RunKind.STRUCTURE_RUN, runId: "r" });
    const streamError = await failure(
      (async () => {
        for await (const _ of follow);
      })(),
    );
    expect(streamError.code).toBe(Code.Unauthenticated);
  });

  it("carries the principal into a stream, and turns a stream's unexpected error into INTERNAL without its message", async () => {
    const principal = { userId: "u-stream", organizationId: "o-stream" };
    const answers = [];
    for await (const answer of events().followEvents(
      { runKind: RunKind.STRUCTURE_RUN, runId: "who" },
      { headers: headersFor(principal) },
    ))
      answers.push(answer.kind.case === "event" ? answer.kind.value.runId : answer.kind.case);
    expect(answers).toEqual(["u-stream"]);
    const follow = events().followEvents(
      { runKind: RunKind.STRUCTURE_RUN, runId: "driver" },
      { headers: headersFor(principal) },
    );
    const error = await failure(
      (async () => {
        for await (const _ of follow);
      })(),
    );
    expect(error.code).toBe(Code.Internal);
    expect(error.rawMessage).not.toMatch(/E11000|loom\.events/);
  });

  it("answers UNIMPLEMENTED for a method the service does not implement", async () => {
    const error = await failure(identity().listUsers({}));
    expect(error.code).toBe(Code.Unimplemented);
  });

  it("releases a caller that gives up on a unary call at once, and one whose deadline passes", async () => {
    const before = unary.abandoned;
    const abort = new AbortController();
    const call = failure(identity().authenticate({ credential: "slow" }, { signal: abort.signal }));
    setTimeout(() => abort.abort(), 20);
    expect((await call).code).toBe(Code.Canceled);
    expect((await failure(identity().authenticate({ credential: "slow" }, { timeoutMs: 30 }))).code).toBe(
      Code.DeadlineExceeded,
    );
    // The implementation is told both times (its signal), so it can stop its work.
    await until(() => unary.abandoned === before + 2);
  });

  it("streams every message in order, then ends and stops the implementation", async () => {
    const before = { ...followed };
    const offsets: bigint[] = [];
    for await (const answer of events().followEvents({ runKind: RunKind.STRUCTURE_RUN, runId: "r1", fromOffset: 5n })) {
      if (answer.kind.case === "event") offsets.push(answer.kind.value.offset);
    }
    expect(offsets).toEqual([5n, 6n, 7n]);
    await until(() => followed.stopped === before.stopped + 1);
  });

  it("cancels a stream when its caller aborts, and tells the implementation", async () => {
    const before = { ...followed };
    const abort = new AbortController();
    const offsets: bigint[] = [];
    const reading = (async () => {
      for await (const answer of events().followEvents(
        { runKind: RunKind.STRUCTURE_RUN, runId: "endless" },
        { signal: abort.signal },
      )) {
        if (answer.kind.case === "event") offsets.push(answer.kind.value.offset);
        if (offsets.length === 3) setTimeout(() => abort.abort(), 10);
      }
    })();
    const error = await failure(reading);
    expect(error.code).toBe(Code.Canceled);
    expect(offsets).toEqual([0n, 1n, 2n]);
    // The implementation was told (its signal) and let go of (its finally ran).
    await until(() => followed.signalAborted === before.signalAborted + 1 && followed.stopped === before.stopped + 1);
  });
});

describe("a service that cannot be reached over HTTP", () => {
  it("fails as UNAVAILABLE naming the service by its contract, not its address", async () => {
    const gone = await startRpcServer({ serviceToken: token, logger, services: [testService] });
    await gone.close(); // its port now refuses connections
    const error = await failure(
      createClient(IdentityService, httpTransport(gone.url, token)).authenticate({ credential: "x" }),
    );
    expect(error).toMatchObject({
      code: Code.Unavailable,
      rawMessage: "the identity service is unavailable, try again later",
    });
    const events = await failure(createClient(EventsService, httpTransport(gone.url, token)).getEvent({}));
    expect(events.rawMessage).toBe("the events service is unavailable, try again later");
  });
});

describe("the RPC server and other Connect clients", () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startRpcServer({ serviceToken: token, logger, services: [testService] });
  });
  afterAll(() => server.close());

  // Loom's own clients send binary, uncompressed unary calls; any other Connect client is served the same.
  it.each([
    [
      "Connect with JSON",
      () => createConnectTransport({ baseUrl: server.url, httpVersion: "1.1", useBinaryFormat: false }),
    ],
    [
      "Connect with gzip-compressed requests",
      () =>
        createConnectTransport({
          baseUrl: server.url,
          httpVersion: "1.1",
          sendCompression: compressionGzip,
          compressMinBytes: 0,
        }),
    ],
    ["gRPC-web", () => createGrpcWebTransport({ baseUrl: server.url, httpVersion: "1.1" })],
  ])("answers %s, unary calls and streams", async (_, makeTransport) => {
    const transport = makeTransport();
    const headers = { [principalHeaders.serviceToken]: token };
    const error = await failure(
      createClient(IdentityService, transport).authenticate({ credential: "x" }, { headers }),
    );
    expect(error).toMatchObject({ code: Code.Unauthenticated, rawMessage: "bad credential" });
    const offsets: bigint[] = [];
    for await (const answer of createClient(EventsService, transport).followEvents(
      { runKind: RunKind.STRUCTURE_RUN, runId: "r2" },
      { headers },
    ))
      if (answer.kind.case === "event") offsets.push(answer.kind.value.offset);
    expect(offsets).toEqual([0n, 1n, 2n]);
  });
});

describe("a service whose connection is cut mid-call", () => {
  it("fails as UNAVAILABLE naming the service", async () => {
    const cutting = createServer((req) => req.socket.destroy());
    await new Promise<void>((resolve) => cutting.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(cutting.address() as AddressInfo).port}`;
      const error = await failure(
        createClient(IdentityService, httpTransport(url, token)).authenticate({ credential: "x" }),
      );
      expect(error).toMatchObject({
        code: Code.Unavailable,
        rawMessage: "the identity service is unavailable, try again later",
      });
    } finally {
      cutting.close();
    }
  });
});

describe("the RPC server", () => {
  it("answers /healthz and /readyz", async () => {
    const server = await startRpcServer({ serviceToken: token, logger, services: [testService] });
    try {
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
