import { isTerminal } from "@loom/contracts/run-lifecycle";
import { hang, trickle } from "@loom/testing/fake-openai";
import { needsOwnServers } from "@loom/testing/own-servers";
import { openSse } from "@loom/testing/sse";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FaultStack, startFaultStack, waitUntil, within } from "./fault-stack.ts";

/**
 * Issue 31, item 2: the events service is killed while runs execute, so their
 * terminal events cannot be written when they end (one errors, one is
 * cancelled). Once it is back, their logs close and every stream of them ends.
 */
describe.skipIf(!needsOwnServers("terminal events while the events service is down", "nats", "ferretdb"))(
  "runs that end while the events service is down",
  () => {
    let stack: FaultStack;
    beforeAll(async () => {
      stack = await startFaultStack();
    }, 60_000);
    afterAll(() => stack?.close());

    it("get their terminal events once it is back, and their streams end; a cancel answers CANCELLED meanwhile", {
      timeout: 90_000,
    }, async () => {
      const { api } = stack;
      const assistantId = (await api.post("/assistants", { name: "ends while events is down", input: "Talk" })).body
        .assistant_id;
      const run = async (id: string) => (await api.get(`/assistant-runs/${id}`)).body;
      // One answers slowly (its next text chunk fails once events is gone: ERROR), one hangs until cancelled.
      stack.model.reply(trickle(Array.from({ length: 60 }, (_, i) => `w${i}`).join(" "), 200));
      const erroring = (await api.post(`/assistants/${assistantId}/runs`, { stream: true })).body
        .assistant_run_id as string;
      await waitUntil("the first run streams", 20_000, async () =>
        (await api.get(`/assistant-runs/${erroring}/events?limit=1`)).body.total_count > 5 ? true : undefined,
      );
      stack.model.reply(hang());
      const cancelled = (await api.post(`/assistants/${assistantId}/runs`, { stream: true })).body
        .assistant_run_id as string;
      // Its one text chunk written (six events): nothing more until it is cancelled.
      await waitUntil("the second run streams", 20_000, async () =>
        (await api.get(`/assistant-runs/${cancelled}/events?limit=1`)).body.total_count >= 6 ? true : undefined,
      );

      await stack.split.stopService("events", "SIGKILL");
      const cancel = await api.post(`/assistant-runs/${cancelled}/cancel`, {});
      const errored = await waitUntil("the first run ends", 20_000, async () => {
        const r = await run(erroring);
        return isTerminal(r.status) ? r : undefined;
      });
      await new Promise((resolve) => setTimeout(resolve, 3_000)); // past the in-line retries: only the sweep can write the ends now
      await stack.split.startService("events");
      const backAt = Date.now();

      const headers = { authorization: `Bearer ${stack.key}` };
      const streams = await Promise.all(
        [erroring, cancelled].map((id) =>
          openSse(`${stack.split.gatewayUrl}/assistant-runs/${id}/events/stream`, headers),
        ),
      );
      const endedAfter = await Promise.all(
        streams.map((sse) => within("the stream ends", 10_000, sse.ended).then(() => Date.now() - backAt)),
      );
      const lastTypes = streams.map((sse) => JSON.parse(sse.events.at(-1)!.data).type as string);
      console.log(
        `terminal events, events SIGKILLed: cancel answered ${cancel.status} ${cancel.body.status}; the other run ended ${errored.status} ${errored.status_detail?.reason}; ` +
          `once events was back, the streams ended ${endedAfter.join(" and ")} ms later with ${lastTypes.join(" and ")}`,
      );
      expect(cancel.status).toBe(200);
      expect(cancel.body.status).toBe("CANCELLED");
      expect(errored.status).toBe("ERROR");
      expect(lastTypes).toEqual(["AssistantRunErrored", "AssistantRunCancelled"]);
      // The sweep looks every second at ends older than its 2 s grace; the stream reads the log when it opens.
      for (const ms of endedAfter) expect(ms).toBeLessThan(6_000);
    });
  },
);
