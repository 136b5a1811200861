import { inMemoryLifecycle } from "@loom/kit/in-memory-store";
import { plainCopy } from "@loom/kit/plain-copy";
import { logClosed } from "../log-closed.ts";
import type { EventRecord, EventsStore, LogRef } from "./port.ts";

interface Log {
  organizationId: string;
  events: EventRecord[];
  closed?: boolean;
}

const logKey = (log: LogRef) => `${log.runKind}:${log.runId}`;

/** The embedded default and the fast test double: an append runs without yielding, so it is atomic. */
export function createMemoryEventsStore(): EventsStore {
  const logs = new Map<string, Log>();
  const byId = new Map<string, EventRecord>();
  const copy = plainCopy;
  return {
    ...inMemoryLifecycle,
    async append(ref, organizationId, batch, closes = false) {
      if (batch.length === 0) throw new Error("an append needs at least one event");
      const key = logKey(ref);
      const log = logs.get(key) ?? { organizationId, events: [] };
      if (log.organizationId !== organizationId) return undefined;
      if (log.closed) throw logClosed();
      if (closes) log.closed = true;
      logs.set(key, log);
      const first = log.events.length;
      const stored = batch.map((e, i): EventRecord => ({ ...copy(e), ...ref, organizationId, offset: first + i }));
      for (const event of stored) {
        log.events.push(event);
        byId.set(event.id, event);
      }
      return copy(stored);
    },
    async list(ref, organizationId, offset, limit) {
      const log = logs.get(logKey(ref));
      if (!log) return { items: [], totalCount: 0 };
      if (log.organizationId !== organizationId) return undefined;
      return { items: copy(log.events.slice(offset, offset + limit)), totalCount: log.events.length };
    },
    async get(organizationId, eventId) {
      const found = byId.get(eventId);
      return found?.organizationId === organizationId && found.runKind === "structure-run" ? copy(found) : undefined;
    },
  };
}
