import type { Logger } from "@loom/telemetry/logger";
import { Gauge, metricsRegistry } from "@loom/telemetry/metrics";
import { connect } from "@nats-io/transport-node";
import { type Bus, type BusConnection, messageBytes, type Subscription } from "./bus.ts";
import { deliverTraced, publishHeaders } from "./tracing.ts";

/**
 * `loom_bus_connected`, registered by the first NATS bus of the process: a
 * process on the in-process bus has no server to lose, and a gauge
 * registered by every process would read 0 there.
 */
let connectedGauge: Gauge | undefined;
function busConnectedGauge(): Gauge {
  return (connectedGauge ??= new Gauge({
    name: "loom_bus_connected",
    help: "1 while the process's NATS connection is up, 0 while it is lost (revocations, cancels and live events then wait for it)",
    registers: [metricsRegistry],
  }));
}

/**
 * The bus across replicas, over core NATS (JetStream is not needed). The
 * client reconnects for as long as the process lives (an outage must not
 * leave a replica without its bus), and says when it is back. A lost
 * server shows in `connection()` (/readyz), `loom_bus_connected` and the log.
 */
export async function createNatsBus(url: string, name: string, logger?: Logger): Promise<Bus> {
  const nc = await connect({ servers: url, name, reconnect: true, maxReconnectAttempts: -1 });
  const gauge = busConnectedGauge();
  let connection: BusConnection = "connected";
  let lostAt = 0;
  gauge.set(1);
  const reconnectListeners = new Set<() => void>();
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "disconnect") {
        connection = "disconnected";
        lostAt = Date.now();
        gauge.set(0);
        logger?.warn(
          { server: status.server },
          "lost the NATS server: gateways ask identity on every request until it is back (no cached credentials), a cancel reaches another replica's worker only at its next lease renewal, live events at keep-alive intervals; reconnecting every 2 s",
        );
        continue;
      }
      if (status.type !== "reconnect") continue;
      // The client sent its subscriptions again on reconnecting; a round trip makes sure the server has them.
      const registered = await nc.flush().then(
        () => true,
        () => false,
      );
      if (!registered) continue;
      connection = "connected";
      gauge.set(1);
      logger?.info({ server: status.server, down_ms: Date.now() - lostAt }, "NATS is back");
      for (const listener of [...reconnectListeners]) listener();
    }
    // The status iterator ends when the connection is closed for good.
    connection = "disconnected";
    gauge.set(0);
  })();
  return {
    async publish(subject, data) {
      // Trace context rides in the message's headers (docs/decisions.md, "Traces").
      const headers = publishHeaders();
      nc.publish(subject, messageBytes(data), headers ? { headers } : undefined);
    },
    subscribe(subject, onMessage): Subscription {
      const sub = nc.subscribe(subject, {
        callback: (error, msg) =>
          void (error || deliverTraced(msg.subject, msg.headers, () => onMessage(msg.data, msg.subject))),
      });
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
    connection: () => (nc.isClosed() ? "disconnected" : connection),
    onReconnect(listener): Subscription {
      reconnectListeners.add(listener);
      return { unsubscribe: () => void reconnectListeners.delete(listener) };
    },
    async close() {
      if (!nc.isClosed()) await nc.drain();
    },
  };
}
