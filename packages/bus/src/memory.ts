import type { Bus, Subscription } from "./bus.ts";
import { messageBytes, subjectMatches } from "./bus.ts";

type Listener = { pattern: string; onMessage: (data: Uint8Array, subject: string) => void };

/**
 * The bus within one process: the embedded default and a test double.
 * Listeners to one exact subject (a run's events: one per follow) are found
 * by it; only wildcard patterns are matched one by one on each publish.
 */
export function createMemoryBus(): Bus & { subscriberCount(): number } {
  const exact = new Map<string, Set<Listener>>();
  const wildcards = new Set<Listener>();
  return {
    async publish(subject, data) {
      const matching = [...(exact.get(subject) ?? [])];
      for (const listener of wildcards) if (subjectMatches(listener.pattern, subject)) matching.push(listener);
      if (matching.length === 0) return; // nobody listens: the message is not even encoded
      const bytes = messageBytes(data);
      for (const listener of matching) queueMicrotask(() => listener.onMessage(bytes, subject));
    },
    subscribe(pattern, onMessage): Subscription {
      const listener = { pattern, onMessage };
      const isWildcard = pattern.split(".").some((token) => token === "*" || token === ">");
      const set = isWildcard ? wildcards : (exact.get(pattern) ?? new Set<Listener>());
      if (!isWildcard) exact.set(pattern, set);
      set.add(listener);
      return {
        unsubscribe: () => {
          set.delete(listener);
          if (!isWildcard && set.size === 0 && exact.get(pattern) === set) exact.delete(pattern);
        },
      };
    },
    ready: async () => true,
    connection: () => "in-process",
    // One process: never disconnected.
    onReconnect: () => ({ unsubscribe: () => {} }),
    close: async () => {
      exact.clear();
      wildcards.clear();
    },
    subscriberCount: () => [...exact.values()].reduce((n, set) => n + set.size, wildcards.size),
  };
}
