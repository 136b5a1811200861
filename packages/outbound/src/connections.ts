import type { LookupFunction } from "node:net";
import { LRUCache } from "lru-cache";
import { Agent, type Dispatcher } from "undici";
import type { CheckedUrl } from "./check.ts";

export interface PinnedConnectionsOptions {
  /** The most checked addresses (with their origins) whose connections are kept; past it the least recently used go. */
  maxAddresses?: number;
  /** How long a connection, or an address's agent, is kept unused before it is closed. */
  idleMs?: number;
}

/** One use of a pinned agent: its dispatcher for one request, released when the request's body is done. */
export interface PinnedLease {
  dispatcher: Dispatcher;
  release(): void;
}

/**
 * Keep-alive connections, each to the address a check allowed. A connection is found by the URL's scheme, host (the
 * `Host` and TLS server name), port and the checked address: a name checked to another address gets connections of
 * its own, so a reused connection always goes where this call's check said it may (docs/decisions.md, "Outbound
 * requests on a user's behalf").
 */
export interface PinnedConnections {
  lease(checked: CheckedUrl): PinnedLease;
  /** The addresses (with their origins) that have an agent: never more than `maxAddresses`. */
  readonly size: number;
  close(): Promise<void>;
}

interface Entry {
  agent: Agent;
  /** Requests whose body is not done yet: an evicted agent closes once it has none. */
  inUse: number;
  evicted: boolean;
}

export function pinnedConnections(options: PinnedConnectionsOptions = {}): PinnedConnections {
  const idleMs = options.idleMs ?? 30_000;
  const close = (entry: Entry) => void entry.agent.close().catch(() => {});
  const agents = new LRUCache<string, Entry>({
    max: options.maxAddresses ?? 256,
    ttl: idleMs,
    updateAgeOnGet: true,
    ttlAutopurge: true,
    // A lease in flight keeps its agent open: closing it would fail a request dispatched a moment later.
    dispose: (entry) => {
      entry.evicted = true;
      if (entry.inUse === 0) close(entry);
    },
  });
  const entryFor = (checked: CheckedUrl) => {
    const key = JSON.stringify([checked.url.protocol, checked.host, checked.url.port, checked.address]);
    const kept = agents.get(key);
    if (kept) return kept;
    const entry: Entry = {
      agent: new Agent({
        connect: { lookup: pinnedLookup(checked) },
        keepAliveTimeout: Math.min(4_000, idleMs),
        // A server's Keep-Alive hint is followed only up to the idle bound.
        keepAliveMaxTimeout: idleMs,
      }),
      inUse: 0,
      evicted: false,
    };
    agents.set(key, entry);
    return entry;
  };
  return {
    lease(checked) {
      const entry = entryFor(checked);
      entry.inUse++;
      let released = false;
      return {
        dispatcher: entry.agent,
        release() {
          if (released) return;
          released = true;
          entry.inUse--;
          if (entry.evicted && entry.inUse === 0) close(entry);
        },
      };
    },
    get size() {
      return agents.size;
    },
    async close() {
      const entries = [...agents.values()];
      agents.clear();
      await Promise.all(entries.map((entry) => entry.agent.close().catch(() => {})));
    },
  };
}

/** One request's agent, closed with its body: what a fetch without kept connections uses. */
export function singleUse(checked: CheckedUrl): PinnedLease {
  const agent = new Agent({ connect: { lookup: pinnedLookup(checked) } });
  return { dispatcher: agent, release: () => void agent.close().catch(() => {}) };
}

/** The connection's lookup, answering every name with the checked address (both call shapes of `net.connect`). */
function pinnedLookup(checked: CheckedUrl): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address: checked.address, family: checked.family }]);
    else callback(null, checked.address, checked.family);
  };
}
