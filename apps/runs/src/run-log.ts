import { type JsonValue } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import { valueToJson } from "@loom/contracts/json-value";
import { lifecycleEventType } from "@loom/contracts/run-lifecycle";
import { EventsService, RunKind } from "@loom/proto/events/v1/events_pb";
import { headersFor } from "@loom/server/principal";
import { traceIdOf } from "@loom/telemetry/tracing";
import type { RunRecord } from "./store/run-records.ts";

/**
 * Appends a run's events through the events service, acting as the run's
 * creator (so the log belongs to the run's organization). The events service
 * refuses appends after a run's terminal event; that means the run was
 * stopped (cancelled, reaped) while this write was on its way, and the write
 * is dropped: nothing ever follows a run's terminal event.
 */
export function createRunLog(events: Client<typeof EventsService>, now: () => Date = () => new Date()) {
  async function append(
    run: RunRecord,
    items: Array<{ type: string; origin: "SYSTEM" | "ASSISTANT"; payload: unknown }>,
  ) {
    const timestamp = now().getTime() / 1000;
    await events
      .appendEvents(
        {
          runKind: RunKind.ASSISTANT_RUN,
          runId: run.id,
          events: items.map((item) => ({
            type: item.type,
            origin: item.origin,
            // As text: a StartPromptEvent holds the whole prompt, and a Value of it cost more than the rest of the run.
            payloadJson: JSON.stringify(item.payload),
            timestamp,
          })),
        },
        { headers: headersFor({ userId: run.createdBy, organizationId: run.organizationId }) },
      )
      .catch((error: unknown) => {
        if (!(error instanceof ConnectError && error.code === Code.FailedPrecondition)) throw error;
      });
  }
  /** The lifecycle event of the run's current status (origin SYSTEM). */
  const lifecycleEvent = (run: RunRecord) => ({
    type: lifecycleEventType[run.status],
    origin: "SYSTEM" as const,
    payload: { status: run.status, ...(run.statusDetail ? { status_detail: run.statusDetail } : {}) },
  });
  /**
   * Griptape events (origin ASSISTANT); the event type is the payload's. A
   * run created inside a trace names it in each event's `meta.trace_id`
   * (griptape keeps `meta` as any dict: docs/decisions.md, "Traces").
   */
  const assistantEvents = (run: RunRecord, payloads: Array<{ type: string; meta?: object }>) => {
    const traceId = traceIdOf(run.traceparent);
    return payloads.map((payload) => ({
      type: payload.type,
      origin: "ASSISTANT" as const,
      payload: traceId ? { ...payload, meta: { ...payload.meta, trace_id: traceId } } : payload,
    }));
  };
  return {
    lifecycle: (run: RunRecord) => append(run, [lifecycleEvent(run)]),
    /** SYSTEM events of Loom's own about the run (an approval awaited, a decision). */
    system: (run: RunRecord, notes: Array<{ type: string; payload: object }>) =>
      append(
        run,
        notes.map((note) => ({ ...note, origin: "SYSTEM" as const })),
      ),
    assistant: (run: RunRecord, payloads: Array<{ type: string; meta?: object }>) =>
      append(run, assistantEvents(run, payloads)),
    /**
     * A run's start in one append (one write instead of three): the
     * lifecycle events of its claim (STARTING) and of RUNNING, its `notes`
     * (SYSTEM events of its own, such as a tool it goes without), then its
     * first griptape events.
     */
    start: (
      starting: RunRecord,
      running: RunRecord,
      payloads: Array<{ type: string; meta?: object }>,
      notes: Array<{ type: string; payload: object }> = [],
    ) =>
      append(running, [
        lifecycleEvent(starting),
        lifecycleEvent(running),
        ...notes.map((note) => ({ ...note, origin: "SYSTEM" as const })),
        ...assistantEvents(running, payloads),
      ]),
    /** The last `count` events of the run's log (fewer in a shorter log), oldest first: type and payload. */
    tail: async (
      run: Pick<RunRecord, "id" | "createdBy" | "organizationId">,
      count: number,
    ): Promise<Array<{ type: string; payload: JsonValue }>> => {
      const headers = headersFor({ userId: run.createdBy, organizationId: run.organizationId });
      const list = (offset: bigint, limit: number) =>
        events.listEvents({ runKind: RunKind.ASSISTANT_RUN, runId: run.id, offset, limit }, { headers });
      const length = (await list(0n, 1)).totalCount;
      const from = length > BigInt(count) ? length - BigInt(count) : 0n;
      return (await list(from, count)).events.map((e) => ({ type: e.type, payload: valueToJson(e.payload) }));
    },
    /** Whether the run's log has any event yet (a create taken over may have written its first). */
    started: async (run: Pick<RunRecord, "id" | "createdBy" | "organizationId">) =>
      (
        await events.listEvents(
          { runKind: RunKind.ASSISTANT_RUN, runId: run.id, offset: 0n, limit: 1 },
          { headers: headersFor({ userId: run.createdBy, organizationId: run.organizationId }) },
        )
      ).totalCount > 0n,
  };
}

export type RunLog = ReturnType<typeof createRunLog>;
