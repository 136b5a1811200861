import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isTerminal } from "@loom/kit/run-lifecycle";
import { trickle } from "@loom/testing/fake-openai";
import { needsOwnServers } from "@loom/testing/own-servers";
import { openSse } from "@loom/testing/sse";
import { startFaultStack, waitUntil, within, type FaultStack } from "./fault-stack.ts";

const pieceCount = 40;
const pieceMs = 100;

/** Issue 11 (a): NATS goes away while a run streams to an SSE client, and comes back on the same port. */
describe.skipIf(!needsOwnServers("NATS outage during an SSE stream", "nats", "ferretdb"))("a NATS outage during an SSE stream", () => {
  let stack: FaultStack;
  beforeAll(async () => {
    stack = await startFaultStack();
  }, 60_000);
  afterAll(() => stack?.close());

  it("delivers every event exactly once, in order, and ends the stream soon after NATS is back", { timeout: 60_000 }, async () => {
    const { api } = stack;
    stack.model.reply(trickle(Array.from({ length: pieceCount }, (_, i) => `w${i}`).join(" "), pieceMs));
    const assistantId = (await api.post("/assistants", { name: "slow", input: "Talk" })).body.assistant_id;
    const created = await api.post(`/assistants/${assistantId}/runs`, { stream: true });
    expect(created.status).toBe(201);
    const runId = created.body.assistant_run_id;
    const sse = await openSse(`${stack.split.gatewayUrl}/assistant-runs/${runId}/events/stream`, { authorization: `Bearer ${stack.key}` });
    expect(sse.status).toBe(200);
    const received = sse.events;

    await sse.waitFor(5);
    const storedCount = async () => (await api.get(`/assistant-runs/${runId}/events?limit=1`)).body.total_count as number;
    await stack.nats.stop("SIGKILL");
    const stoppedAt = Date.now();
    const atStop = received.length;
    // Down while the run goes on, until it has ended: no later live event reveals what the bus lost.
    await waitUntil("the run ends while NATS is down", 15_000, async () => (isTerminal((await api.get(`/assistant-runs/${runId}`)).body.status) ? true : undefined));
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
});
