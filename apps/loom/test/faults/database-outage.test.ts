import { randomUUID } from "node:crypto";
import { needsOwnServers } from "@loom/testing/own-servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FaultStack, startFaultStack, waitUntil } from "./fault-stack.ts";

interface Write {
  kind: "assistant" | "event";
  status: number;
  retryAfter: string | null;
  startedAt: number;
  ms: number;
  /** What the write made: an assistant's id, or the event's type in its structure run. */
  made?: { assistantId: string } | { runId: string; type: string };
}

const clients = 6;
/**
 * Longest answer allowed while the database is gone: the driver gives up
 * waiting for an answer on an open connection after 10 s (socketTimeoutMS),
 * and a retryable write then tries once more, selecting a server for up to
 * 5 s (serverSelectionTimeoutMS); 1 s of slack. Seen: 10.0–13.0 s frozen.
 */
const answerBoundMs = 10_000 + 5_000 + 1_000;

/** Issue 11 (b): FerretDB goes away under a write load and comes back on the same data. */
describe.skipIf(!needsOwnServers("database outage under load", "nats", "ferretdb"))(
  "a database outage under load",
  () => {
    let stack: FaultStack;
    beforeAll(async () => {
      stack = await startFaultStack();
    }, 60_000);
    afterAll(() => stack?.close());

    // Killed: connections drop at once. Frozen (SIGSTOP): they stay open and nothing answers, as in a partition.
    it.each(["killed", "frozen"] as const)(
      "%s: answers writes 503 with Retry-After, loses nothing acknowledged, and recovers by itself",
      { timeout: 90_000 },
      async (fault) => {
        const { api } = stack;
        const writes: Write[] = [];
        let stopLoad = false;
        const client = async (n: number) => {
          const runId = randomUUID();
          for (let i = 0; !stopLoad; i++) {
            const startedAt = Date.now();
            if (i % 2 === 0) {
              const res = await api.post("/assistants", { name: `load ${n}.${i}` });
              const made = res.status === 201 ? { assistantId: res.body.assistant_id as string } : undefined;
              writes.push({
                kind: "assistant",
                status: res.status,
                retryAfter: res.headers.get("retry-after"),
                startedAt,
                ms: Date.now() - startedAt,
                made,
              });
            } else {
              const type = `Load${i}`;
              const res = await api.post(`/structure-runs/${runId}/events`, [
                { type, timestamp: 1767225600, payload: { n, i } },
              ]);
              writes.push({
                kind: "event",
                status: res.status,
                retryAfter: res.headers.get("retry-after"),
                startedAt,
                ms: Date.now() - startedAt,
                made: res.status === 202 ? { runId, type } : undefined,
              });
            }
          }
        };
        const load = Promise.all(Array.from({ length: clients }, (_, n) => client(n)));
        const ok = (w: Write) => w.status === 201 || w.status === 202;

        await waitUntil("writes succeed", 10_000, async () => (writes.filter(ok).length >= 30 ? true : undefined));
        if (fault === "killed") await stack.mongo.stop("SIGKILL");
        else stack.mongo.freeze();
        const stoppedAt = Date.now();
        // Down until writes made after the stop were refused (not only those cut off by it): one per
        // client when killed (some wait out the server selection), two when frozen (each waits 10 s).
        const refusals = fault === "killed" ? clients : 2;
        await waitUntil("writes refused", 30_000, async () =>
          writes.filter((w) => w.status === 503 && w.startedAt >= stoppedAt).length >= refusals ? true : undefined,
        );
        // The server may answer a little before start() has seen its port open.
        const restartingAt = Date.now();
        if (fault === "killed") await stack.mongo.start();
        else stack.mongo.thaw();
        const restartedAt = Date.now();
        const recovered = await waitUntil("writes succeed again", 30_000, async () =>
          writes.find((w) => ok(w) && w.startedAt >= restartedAt),
        );
        // A little more load after the recovery, then quiet.
        const recoveredAt = recovered.startedAt + recovered.ms;
        await waitUntil("more writes succeed", 10_000, async () =>
          writes.filter((w) => ok(w) && w.startedAt >= recoveredAt).length >= 20 ? true : undefined,
        );
        stopLoad = true;
        await load;

        const acknowledged = writes.filter(ok);
        const refused = writes.filter((w) => w.status === 503);
        const other = writes.filter((w) => !ok(w) && w.status !== 503);
        const lost: Write[] = [];
        for (const w of acknowledged) {
          if (w.made && "assistantId" in w.made) {
            if ((await api.get(`/assistants/${w.made.assistantId}`)).status !== 200) lost.push(w);
          }
        }
        const eventsByRun = new Map<string, Set<string>>();
        for (const w of acknowledged) {
          if (!w.made || !("runId" in w.made)) continue;
          if (!eventsByRun.has(w.made.runId)) {
            const listed = (await api.get(`/structure-runs/${w.made.runId}/events?limit=1000`)).body.events as Array<{
              type: string;
            }>;
            eventsByRun.set(w.made.runId, new Set(listed.map((e) => e.type)));
          }
          if (!eventsByRun.get(w.made.runId)!.has(w.made.type)) lost.push(w);
        }
        const slowest = Math.max(...writes.map((w) => w.ms));
        // Acknowledged without a database would be lost: nothing started after the stop may be answered 2xx before the restart.
        const ackedWhileDown = writes.filter(
          (w) => ok(w) && w.startedAt >= stoppedAt && w.startedAt + w.ms < restartingAt,
        );
        console.log(
          `fault (b) FerretDB ${fault} under ${clients} writers: ${writes.length} writes, ${acknowledged.length} acknowledged, ${refused.length} 503, ${other.length} other ` +
            `(${[...new Set(other.map((w) => w.status))].join(", ") || "none"}); down ${restartedAt - stoppedAt} ms; ` +
            `503s answered in ${Math.min(...refused.map((w) => w.ms))}–${Math.max(...refused.map((w) => w.ms))} ms; slowest answer ${slowest} ms; ` +
            `writes succeed again ${recoveredAt - restartedAt} ms after the restart; acknowledged but lost: ${lost.length}; acknowledged while down: ${ackedWhileDown.length}`,
        );
        expect(other.map((w) => w.status)).toEqual([]);
        expect(refused.every((w) => Number(w.retryAfter) > 0)).toBe(true);
        expect(slowest).toBeLessThan(answerBoundMs);
        expect(lost).toEqual([]);
        expect(ackedWhileDown).toEqual([]);
        expect(recoveredAt - restartedAt).toBeLessThan(15_000);
      },
    );
  },
);
