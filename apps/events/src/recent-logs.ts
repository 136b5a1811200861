import type { Event } from "@loom/proto/events/v1/events_pb";
import { LRUCache } from "lru-cache";
import type { LogRef } from "./store/port.ts";

/**
 * The events this replica stored lately, by assistant-run log, kept while
 * they fit (least recently used out first): a follow of a log that closed
 * here, the usual stream of a run opened just after it ended, is answered
 * from them with no store read and no bus subscription.
 *
 * Only a closed log is served, and only from offsets this replica holds
 * without a gap up to its terminal event: offsets are dense and a stored
 * event never changes, so those events are exactly what the store holds
 * there, whatever other replicas wrote before them. A structure run's log is
 * never kept: it may grow after its end event.
 */
export interface RecentLogs {
  /** Events of `log` just stored and published, in offset order; `closes` when they end the log. */
  add(log: LogRef, organizationId: string, events: Event[], closes: boolean): void;
  /** The closed log's events from `from` to its terminal event, when all are held; undefined otherwise. */
  closedFrom(log: LogRef, organizationId: string, from: number): Event[] | undefined;
}

interface Kept {
  organizationId: string;
  /** The offset of events[0]. */
  first: number;
  events: Event[];
  closed: boolean;
  bytes: number;
}

/** What an event is counted for against maxBytes: its payload text, and the rest of it roughly. */
const sizeOf = (event: Event) => 256 + event.payloadJson.length;

export function createRecentLogs(maxBytes: number): RecentLogs {
  const logs = new LRUCache<string, Kept>({ maxSize: maxBytes, sizeCalculation: (kept) => Math.max(1, kept.bytes) });
  const keyOf = (log: LogRef) => `${log.runKind}/${log.runId}`;
  return {
    add(log, organizationId, events, closes) {
      if (log.runKind !== "assistant-run" || events.length === 0) return;
      const key = keyOf(log);
      const start = Number(events[0]!.offset);
      const held = logs.get(key);
      // Another replica's appends came between: what follows is kept from here on.
      const kept =
        held && !held.closed && held.organizationId === organizationId && held.first + held.events.length === start
          ? held
          : { organizationId, first: start, events: [], closed: false, bytes: 0 };
      for (const event of events) {
        kept.events.push(event);
        kept.bytes += sizeOf(event);
      }
      kept.closed = closes;
      logs.set(key, kept);
    },
    closedFrom(log, organizationId, from) {
      const kept = logs.get(keyOf(log));
      if (!kept?.closed || kept.organizationId !== organizationId || from < kept.first) return undefined;
      return kept.events.slice(from - kept.first);
    },
  };
}
