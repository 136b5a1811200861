import { subjects } from "@loom/contracts/subjects";
import { startStack, type TestStack } from "@loom/test-stacks/in-process-stack";
import { type ApiClient, apiClient } from "@loom/testing/http";
import { needsOwnServers, type OwnServer, startOwnNats } from "@loom/testing/own-servers";
import { createScriptedModel } from "@loom/testing/scripted-model";
import { testServers } from "@loom/testing/servers";
import { openSse } from "@loom/testing/sse";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHoldingProxy } from "./holding-proxy.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A key deleted through one gateway stops working on every other at once,
 * despite their caches, for requests and for open streams. Over NATS when
 * NATS_URL is set (each replica its own connection, as separate processes),
 * else over the in-process bus.
 */
describe(`revocation across gateway replicas (${testServers.natsUrl ? "NATS" : "in-process"} bus)`, () => {
  let stack: TestStack;
  let admin: ApiClient;
  let userId: string;
  const model = createScriptedModel();
  beforeAll(async () => {
    stack = await startStack("sqlite", { inject: { runs: { model } } });
    admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
    userId = (await admin.get("/users")).body.users[0].user_id;
  });
  afterAll(() => stack?.close());

  const newKey = async () =>
    (await admin.post(`/users/${userId}/api-keys`, { name: "revoked soon" })).body as {
      api_key_id: string;
      value: string;
    };

  /** Resolves when the revocation of `apiKeyId` is on the bus (seen through the test's own subscription). */
  const revocationHeard = (apiKeyId: string) =>
    new Promise<void>((resolve) => {
      const subscription = stack.bus.subscribe(subjects.revokedApiKeys, (data) => {
        if (new TextDecoder().decode(data) !== apiKeyId) return;
        subscription.unsubscribe();
        resolve();
      });
    });

  it("rejects a deleted key on a replica that had it cached", async () => {
    const other = await stack.addGateway();
    const key = await newKey();
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

  it("neither trusts nor caches an answer that was on its way while the key was deleted", async () => {
    // The replica reaches identity through a proxy that can hold Authenticate's answers.
    const proxy = await startHoldingProxy(stack.urls.identity, "Authenticate");
    try {
      const replica = await stack.addGateway({ urls: { identity: proxy.url } });
      const [key, kept] = [await newKey(), await newKey()];
      const heard = revocationHeard(key.api_key_id);
      proxy.hold();
      const held = proxy.answerHeld();
      const inFlight = apiClient(replica, key.value).get("/users");
      await held; // identity found the key and said so; the answer waits in the proxy
      const keptHeld = proxy.answerHeld();
      const keptInFlight = apiClient(replica, kept.value).get("/users");
      await keptHeld;

      expect((await admin.delete(`/api-keys/${key.api_key_id}`)).status).toBe(204);
      await heard;
      await sleep(100); // the replica's own bus connection gets the same message about now
      proxy.release();

      expect((await inFlight).status).toBe(401);
      expect((await keptInFlight).status).toBe(200); // another key's deletion meanwhile is no reason to refuse it
      // Not cached either: the next requests, within identity's 30 s, are refused too.
      for (let i = 0; i < 3; i++) expect((await apiClient(replica, key.value).get("/users")).status).toBe(401);
    } finally {
      proxy.release();
      await proxy.close();
    }
  });

  it("ends the key's open event streams at once, on the replica that served the DELETE and on another", async () => {
    const other = await stack.addGateway();
    const key = await newKey();
    const auth = { authorization: `Bearer ${key.value}` };
    // A run that streams for a minute unless stopped.
    model.script({ answer: () => Array.from({ length: 600 }, (_, i) => `w${i}`).join(" "), chunkDelayMs: 100 });
    const assistantId = (await admin.post("/assistants", { name: "long talker" })).body.assistant_id;
    const runId = (await admin.post(`/assistants/${assistantId}/runs`, { stream: true })).body.assistant_run_id;
    const path = `/assistant-runs/${runId}/events/stream`;
    const here = await openSse(`${stack.gatewayUrl}${path}`, auth);
    const there = await openSse(`${other}${path}`, auth);
    const untouched = await openSse(`${stack.gatewayUrl}${path}`, { authorization: `Bearer ${stack.bootstrapKey}` });
    await Promise.all([here.waitFor(5), there.waitFor(5)]);

    expect((await admin.delete(`/api-keys/${key.api_key_id}`)).status).toBe(204);
    const endedWithin = (sse: { ended: Promise<void> }) =>
      Promise.race([sse.ended.then(() => "ended"), sleep(2_000).then(() => "still open")]);
    expect(await endedWithin(here)).toBe("ended");
    expect(await endedWithin(there)).toBe("ended");
    const delivered = [here.events.length, there.events.length];
    await sleep(500);
    expect([here.events.length, there.events.length]).toEqual(delivered);
    // A reconnection with the deleted key is refused; another key's stream goes on.
    expect((await openSse(`${other}${path}`, auth)).status).toBe(401);
    const before = untouched.events.length;
    await untouched.waitFor(before + 2);
    expect(untouched.events.length).toBeGreaterThan(before);
    untouched.close();
    await admin.post(`/assistant-runs/${runId}/cancel`);
  });
});

/**
 * Issue 31 item 4, while a replica's NATS connection is lost: it cannot hear
 * revocations, so it serves no credential from its cache (and caches none),
 * and forgets what it cached before once the connection is back.
 */
describe.skipIf(!needsOwnServers("revocation while a gateway's NATS is lost", "nats"))(
  "revocation while a gateway replica's NATS is lost",
  () => {
    let stack: TestStack;
    let admin: ApiClient;
    let userId: string;
    let nats: OwnServer | undefined;
    beforeAll(async () => {
      stack = await startStack("sqlite");
      admin = apiClient(stack.gatewayUrl, stack.bootstrapKey);
      userId = (await admin.get("/users")).body.users[0].user_id;
    });
    afterAll(async () => {
      await stack?.close();
      await nats?.close();
    });

    it("refuses a key deleted during the outage at once, and one deleted before the bus came back after it", {
      timeout: 30_000,
    }, async () => {
      // The replica's bus is on a NATS of its own, which the test stops: the replica alone loses it.
      nats = await startOwnNats();
      const replica = await stack.addGateway({ natsUrl: nats.url });
      const busOf = async () => (await apiClient(replica).get("/readyz")).body.bus as string;
      const waitForBus = async (state: string) => {
        const deadline = Date.now() + 15_000;
        while ((await busOf()) !== state) {
          if (Date.now() > deadline) throw new Error(`the replica's bus never became ${state}`);
          await sleep(50);
        }
      };
      const newKey = async (name: string) =>
        (await admin.post(`/users/${userId}/api-keys`, { name })).body as { api_key_id: string; value: string };
      const [during, beforeReturn] = [
        await newKey("deleted during the outage"),
        await newKey("deleted before the bus is back"),
      ];
      for (const key of [during, beforeReturn])
        expect((await apiClient(replica, key.value).get("/users")).status).toBe(200); // cached on the replica
      expect(await busOf()).toBe("connected");

      await nats.stop("SIGKILL");
      await waitForBus("disconnected");
      expect((await admin.delete(`/api-keys/${during.api_key_id}`)).status).toBe(204);
      expect((await apiClient(replica, during.value).get("/users")).status).toBe(401);
      // Deleted while the replica could not hear it, and not used there until the bus is back.
      expect((await admin.delete(`/api-keys/${beforeReturn.api_key_id}`)).status).toBe(204);

      await nats.start();
      await waitForBus("connected");
      expect((await apiClient(replica, beforeReturn.value).get("/users")).status).toBe(401);
      // A live key still works, and is cached again.
      expect((await apiClient(replica, stack.bootstrapKey).get("/users")).status).toBe(200);
    });
  },
);
