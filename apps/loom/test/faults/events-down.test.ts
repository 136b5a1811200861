import { needsOwnServers } from "@loom/testing/own-servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FaultStack, startFaultStack, waitUntil } from "./fault-stack.ts";

/** Issue 11 (d): the events service is down; creating a run must not leave a run behind. */
describe.skipIf(!needsOwnServers("events service down", "nats", "ferretdb"))("the events service down", () => {
  let stack: FaultStack;
  beforeAll(async () => {
    stack = await startFaultStack();
  }, 60_000);
  afterAll(() => stack?.close());

  for (const signal of ["SIGKILL", "SIGTERM"] as const) {
    it(`run creation answers 503 and stores no run (${signal}); works again once events is back`, {
      timeout: 60_000,
    }, async () => {
      const { api } = stack;
      const assistantId = (await api.post("/assistants", { name: `events down (${signal})`, input: "Talk" })).body
        .assistant_id;

      await stack.split.stopService("events", signal);
      const attempts = [];
      for (let i = 0; i < 3; i++) {
        const started = Date.now();
        const res = await api.post(`/assistants/${assistantId}/runs`, { stream: true });
        attempts.push({
          status: res.status,
          retryAfter: res.headers.get("retry-after"),
          ms: Date.now() - started,
          body: JSON.stringify(res.body),
        });
      }
      // The gateway's own call to the stopped process: which service is down, never where it lived.
      const listedEvents = await api.get(`/structure-runs/${crypto.randomUUID()}/events`);
      const listedWhileDown = await api.get(`/assistants/${assistantId}/runs`);

      await stack.split.startService("events");
      const backAt = Date.now();
      const created = await waitUntil("a run is created again", 10_000, async () => {
        const res = await api.post(`/assistants/${assistantId}/runs`, { stream: true });
        return res.status === 201 ? res.body : undefined;
      });
      const listed = (await api.get(`/assistants/${assistantId}/runs`)).body.assistant_runs as Array<{
        assistant_run_id: string;
      }>;
      console.log(
        `fault (d) events ${signal}: creation answered ${attempts.map((a) => `${a.status} (Retry-After ${a.retryAfter}) in ${a.ms} ms`).join(", ")}; ` +
          `runs listed while down: ${listedWhileDown.body.assistant_runs?.length} [${listedWhileDown.body.assistant_runs?.map((r: { status: string }) => r.status).join(", ")}]; created again ${Date.now() - backAt} ms after events was back`,
      );
      for (const attempt of attempts) {
        expect(attempt.status).toBe(503);
        expect(Number(attempt.retryAfter)).toBeGreaterThan(0);
        expect(attempt.body).not.toMatch(/ECONN|127\.0\.0\.1|:\d{2,5}\b/);
      }
      expect(listedEvents.status).toBe(503);
      expect(listedEvents.body.errors).toEqual([{ message: "the events service is unavailable, try again later" }]);
      expect(listedWhileDown.status).toBe(200);
      expect(listedWhileDown.body.assistant_runs).toEqual([]);
      // Only the run created after events came back exists.
      expect(listed.map((r) => r.assistant_run_id)).toEqual([created.assistant_run_id]);
    });
  }
});
