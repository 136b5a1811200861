import type { Bus, Subscription } from "./bus.ts";
import { messageBytes, subjectMatches } from "./bus.ts";

type Listener = { pattern: string; onMessage: (data: Uint8Array, subject: string) => void };

/** The bus within one process: the embedded default and a test double. */
export function createMemoryBus(): Bus & { subscriberCount(): number } {
  const listeners = new Set<Listener>();
  return {
    async publish(subject, data) {
      const matching = [...listeners].filter((listener) => subjectMatches(listener.pattern, subject));
      if (matching.length === 0) return; // nobody listens: the message is not even encoded
      const bytes = messageBytes(data);
      for (const listener of matching) queueMicrotask(() => listener.onMessage(bytes, subject));
    },
    subscribe(pattern, onMessage): Subscription {
      const listener = { pattern, onMessage };
      listeners.add(listener);
      return { unsubscribe: () => void listeners.delete(listener) };
    },
    ready: async () => true,
    connection: () => "in-process",
    // One process: never disconnected.
    onReconnect: () => ({ unsubscribe: () => {} }),
    close: async () => listeners.clear(),
    subscriberCount: () => listeners.size,
  };
}
