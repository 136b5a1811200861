import { isTerminal } from "@loom/contracts/run-lifecycle";
import { type AllInOne, startAllInOne } from "@loom/test-stacks/all-in-one";
import { answer, trickle } from "@loom/testing/fake-openai";
import { scrapeMetrics } from "@loom/testing/metrics";
import { needsOwnServers, type OwnServer, startOwnNats } from "@loom/testing/own-servers";
import { openSse } from "@loom/testing/sse";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FaultStack, startFaultStack, waitUntil, within } from "./fault-stack.ts";

const pieceCount = 40;
const pieceMs = 100;

/** The processes of the split stack that use NATS (assistants and storage have no bus). */
const onNats = ["gateway", "identity", "events", "runs"] as const;

/**
 * Issue 11 (a): NATS goes away while a run streams to an SSE client, and comes back on the same port.
 * Issue 31 item 16: while it is away, every process on it says so (/readyz, loom_bus_connected) and still serves.
 */
describe.skipIf(!needsOwnServers("NATS outage", "nats", "ferretdb"))("a NATS outage", () => {
  let stack: FaultStack;
  beforeAll(async () => {
    stack = await startFaultStack();
  }, 60_000);
  afterAll(() => stack?.close());

  it("delivers every event exactly once, in order, and ends the stream soon after NATS is back", {
    timeout: 60_000,
  }, async () => {
    const { api } = stack;
    stack.model.reply(trickle(Array.from({ length: pieceCount }, (_, i) => `w${i}`).join(" "), pieceMs));
    const assistantId = (await api.post("/assistants", { name: "slow", input: "Talk" })).body.assistant_id;
    const created = await api.post(`/assistants/${assistantId}/runs`, { stream: true });
    expect(created.status).toBe(201);
    const runId = created.body.assistant_run_id;
    const sse = await openSse(`${stack.split.gatewayUrl}/assistant-runs/${runId}/events/stream`, {
      authorization: `Bearer ${stack.key}`,
    });
    expect(sse.status).toBe(200);
    const received = sse.events;

    await sse.waitFor(5);
    const storedCount = async () =>
      (await api.get(`/assistant-runs/${runId}/events?limit=1`)).body.total_count as number;
    await stack.nats.stop("SIGKILL");
    const stoppedAt = Date.now();
    const atStop = received.length;
    // Down while the run goes on, until it has ended: no later live event reveals what the bus lost.
    await waitUntil("the run ends while NATS is down", 15_000, async () =>
      isTerminal((await api.get(`/assistant-runs/${runId}`)).body.status) ? true : undefined,
    );
    const duringOutage = received.length - atStop;
    await stack.nats.start();
    const restartedAt = Date.now();
    const resumed = sse.waitFor(received.length + 1).then(() => Date.now());
    await within("the stream ends", 30_000, sse.ended);
    const endedAt = Date.now();

    const offsets = received.map((e) => Number(e.id));
    const total = await storedCount();
    const types = received.map((e) => JSON.parse(e.data).type as string);
    console.log(
      `fault (a) NATS outage: ${received.length} events received of ${total} stored (${types.filter((t) => t === "TextChunkEvent").length} text chunks); ` +
        `NATS down ${restartedAt - stoppedAt} ms, ${duringOutage} events reached the client while it was down; ` +
        `first event ${(await resumed) - restartedAt} ms and the end ${endedAt - restartedAt} ms after NATS restarted`,
    );
    expect(offsets).toEqual(Array.from({ length: total }, (_, i) => i));
    expect(types.at(-1)).toBe("AssistantRunSucceeded");
    expect(types.filter((t) => t === "TextChunkEvent").length).toBe(pieceCount);
    // The client reconnects within its 2 s wait (jittered) and the follows read what the bus lost then,
    // not at the next 15 s keep-alive.
    expect(endedAt - restartedAt).toBeLessThan(5_000);
  });

  it("shows in every NATS process's /readyz and loom_bus_connected while it lasts; the processes stay ready and runs still succeed", {
    timeout: 60_000,
  }, async () => {
    const { api, split } = stack;
    /** What each process on NATS says of its bus: the gateway's /readyz JSON, each service's /readyz text, and every /metrics. */
    const busState = async () => {
      const gateway = await api.get("/readyz");
      const services = await Promise.all(
        onNats
          .filter((name) => name !== "gateway")
          .map(async (name) => {
            const res = await fetch(`${split.urls[name]}/readyz`);
            return `${res.status} ${await res.text()}`;
          }),
      );
      const gauges = await Promise.all(
        onNats.map(async (name) => (await scrapeMetrics(split.metricsUrls[name])).value("loom_bus_connected")),
      );
      return { gateway: `${gateway.status} ${gateway.body.status} bus ${gateway.body.bus}`, services, gauges };
    };
    const expected = (bus: "connected" | "disconnected") => ({
      gateway: `200 ready bus ${bus}`,
      services: onNats.slice(1).map(() => `200 ready; bus ${bus}`),
      gauges: onNats.map(() => (bus === "connected" ? 1 : 0)),
    });
    const settlesAt = (bus: "connected" | "disconnected", ms: number) =>
      waitUntil(`every process says the bus is ${bus}`, ms, async () => {
        const state = await busState();
        return JSON.stringify(state) === JSON.stringify(expected(bus)) ? state : undefined;
      });

    // The test before restarted NATS: each process is back once its client's jittered reconnect wait (≤ 2 s) is over.
    await settlesAt("connected", 15_000);
    await stack.nats.stop("SIGKILL");
    const stoppedAt = Date.now();
    await settlesAt("disconnected", 10_000);
    const seenAfter = Date.now() - stoppedAt;

    // Degraded, not down: a run is created, executed and read without the bus.
    stack.model.reply(answer("without the bus"));
    const assistantId = (await api.post("/assistants", { name: "no bus", input: "Talk" })).body.assistant_id;
    const runId = (await api.post(`/assistants/${assistantId}/runs`, {})).body.assistant_run_id;
    const run = await waitUntil("the run succeeds while NATS is down", 20_000, async () => {
      const body = (await api.get(`/assistant-runs/${runId}`)).body;
      return isTerminal(body.status) ? body : undefined;
    });
    expect(run.status).toBe("SUCCEEDED");

    await stack.nats.start();
    const restartedAt = Date.now();
    await settlesAt("connected", 15_000);
    console.log(
      `NATS outage seen by every process ${seenAfter} ms after the kill; reconnected ${Date.now() - restartedAt} ms after the restart`,
    );
  });
});

/** Issue 31 item 16, the all-in-one process on NATS: its /readyz and /metrics say when the bus is lost, and it stays ready. */
describe.skipIf(!needsOwnServers("NATS outage of the all-in-one process", "nats"))(
  "a NATS outage under the all-in-one process",
  () => {
    let nats: OwnServer | undefined;
    let loom: AllInOne | undefined;
    afterAll(async () => {
      await loom?.stop("SIGKILL");
      await nats?.close();
    });

    it("shows in its /readyz body and loom_bus_connected, and it stays ready", { timeout: 60_000 }, async () => {
      nats = await startOwnNats();
      loom = await startAllInOne({ PORT: "0", NATS_URL: nats.url, METRICS_PORT: "0" });
      const metricsUrl = /metrics at (http:\/\/\S+\/metrics)/.exec(loom.output())![1]!;
      const state = async () => {
        const readyz = await fetch(`${loom!.url}/readyz`);
        const body = (await readyz.json()) as { status: string; bus?: string };
        return `${readyz.status} ${body.status} bus ${body.bus} gauge ${(await scrapeMetrics(metricsUrl)).value("loom_bus_connected")}`;
      };
      expect(await state()).toBe("200 ready bus connected gauge 1");
      await nats.stop("SIGKILL");
      await waitUntil("the all-in-one says the bus is lost", 10_000, async () =>
        (await state()) === "200 ready bus disconnected gauge 0" ? true : undefined,
      );
      expect(loom.output()).toContain("lost the NATS server");
      await nats.start();
      await waitUntil("the all-in-one says the bus is back", 15_000, async () =>
        (await state()) === "200 ready bus connected gauge 1" ? true : undefined,
      );
      expect(loom.output()).toContain("NATS is back");
    });
  },
);
