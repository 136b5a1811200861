import { connect } from "@nats-io/transport-node";
import type { Bus, Subscription } from "./bus.ts";
import { deliverTraced, publishHeaders } from "./bus-tracing.ts";

/**
 * The bus across replicas, over core NATS (JetStream is not needed). The
 * client reconnects for as long as the process lives (an outage must not
 * leave a replica without its bus), and says when it is back.
 */
export async function createNatsBus(url: string, name: string): Promise<Bus> {
  const nc = await connect({ servers: url, name, reconnect: true, maxReconnectAttempts: -1 });
  const reconnectListeners = new Set<() => void>();
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type !== "reconnect") continue;
      // The client sent its subscriptions again on reconnecting; a round trip makes sure the server has them.
      const registered = await nc.flush().then(() => true, () => false);
      if (registered) for (const listener of [...reconnectListeners]) listener();
    }
  })();
  return {
    async publish(subject, data) {
      // Trace context rides in the message's headers (docs/decisions.md, "Traces").
      const headers = publishHeaders();
      nc.publish(subject, data, headers ? { headers } : undefined);
    },
    subscribe(subject, onMessage): Subscription {
      const sub = nc.subscribe(subject, { callback: (error, msg) => void (error || deliverTraced(msg.subject, msg.headers, () => onMessage(msg.data, msg.subject))) });
      return { unsubscribe: () => sub.unsubscribe() };
    },
    async ready() {
      if (nc.isClosed()) return false;
      try {
        await nc.flush();
        return true;
      } catch {
        return false;
      }
    },
    onReconnect(listener): Subscription {
      reconnectListeners.add(listener);
      return { unsubscribe: () => void reconnectListeners.delete(listener) };
    },
    async close() {
      if (!nc.isClosed()) await nc.drain();
    },
  };
}
