import { isTerminal } from "@loom/contracts/run-lifecycle";
import { hang } from "@loom/testing/fake-openai";
import { needsOwnServers } from "@loom/testing/own-servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FaultStack, faultLeaseMs, startFaultStack, waitUntil } from "./fault-stack.ts";

/** Issue 11 (c): the runs process is killed mid-run; another one takes over. */
describe.skipIf(!needsOwnServers("runs process killed mid-run", "nats", "ferretdb"))(
  "the runs process killed mid-run",
  () => {
    let stack: FaultStack;
    beforeAll(async () => {
      stack = await startFaultStack();
    }, 60_000);
    afterAll(() => stack?.close());

    it("ends its runs ERROR (WorkerLost) within the lease once another runs process is up; none stays open", {
      timeout: 60_000,
    }, async () => {
      const { api } = stack;
      // A model that starts answering and then stalls: the runs stay RUNNING.
      stack.model.reply(hang());
      const assistantId = (await api.post("/assistants", { name: "stalled", input: "Talk" })).body.assistant_id;
      const runIds: string[] = [];
      for (let i = 0; i < 3; i++) {
        const created = await api.post(`/assistants/${assistantId}/runs`, { stream: true });
        expect(created.status).toBe(201);
        runIds.push(created.body.assistant_run_id);
      }
      const status = async (id: string) => (await api.get(`/assistant-runs/${id}`)).body;
      await waitUntil("every run RUNNING", 10_000, async () =>
        (await Promise.all(runIds.map(status))).every((r) => r.status === "RUNNING") ? true : undefined,
      );

      await stack.split.stopService("runs", "SIGKILL");
      const killedAt = Date.now();
      await stack.split.startService("runs");
      const upAt = Date.now();
      const ended = await waitUntil("every run ended", 20_000, async () => {
        const runs = await Promise.all(runIds.map(status));
        return runs.every((r) => isTerminal(r.status)) ? runs : undefined;
      });
      const endedAt = Date.now();

      const listed = (await api.get(`/assistants/${assistantId}/runs`)).body.assistant_runs as Array<{
        status: string;
      }>;
      const events = (await api.get(`/assistant-runs/${runIds[0]}/events`)).body.events as Array<{ type: string }>;
      console.log(
        `fault (c) runs SIGKILL: ${ended.length} runs ERROR/${ended[0]?.status_detail?.reason} ${endedAt - killedAt} ms after the kill ` +
          `(new runs process up after ${upAt - killedAt} ms, runs ended ${endedAt - upAt} ms later; lease ${faultLeaseMs} ms)`,
      );
      for (const run of ended) {
        expect(run.status).toBe("ERROR");
        expect(run.status_detail).toMatchObject({ reason: "WorkerLost" });
      }
      expect(events.at(-1)?.type).toBe("AssistantRunErrored");
      expect(listed.filter((r) => !isTerminal(r.status))).toEqual([]);
      // The lease runs out at most one lease after the kill (renewed every third of it); the new process's
      // reaper looks when it starts and every half lease.
      expect(endedAt - upAt).toBeLessThan(faultLeaseMs * 1.5 + 1_000);
    });
  },
);
