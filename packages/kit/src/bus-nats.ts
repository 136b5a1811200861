import { connect } from "@nats-io/transport-node";
import type { Bus, Subscription } from "./bus.ts";

/** The bus across replicas, over core NATS (JetStream is not needed). */
export async function createNatsBus(url: string, name: string): Promise<Bus> {
  const nc = await connect({ servers: url, name, reconnect: true, maxReconnectAttempts: -1 });
  return {
    async publish(subject, data) {
      nc.publish(subject, data);
    },
    subscribe(subject, onMessage): Subscription {
      const sub = nc.subscribe(subject, { callback: (error, msg) => void (error || onMessage(msg.data, msg.subject)) });
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
    async close() {
      if (!nc.isClosed()) await nc.drain();
    },
  };
}
