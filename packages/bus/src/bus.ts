/**
 * Publish/subscribe between replicas (docs/behaviour.md §6, ARCHITECTURE.md "An event's
 * path"). Subjects are dot-separated; a subscription may use `*` for one
 * token and a trailing `>` for the rest, as NATS does. Delivery is at most
 * once: the database is the record, the bus only says "look now".
 */
export interface Bus {
  /**
   * `data` may be given as a function when encoding it costs (an event's
   * payload): it is called once, and only if the message goes anywhere (the
   * in-process bus skips it when no subscription matches; NATS always sends).
   */
  publish(subject: string, data: MessageData): Promise<void>;
  subscribe(subject: string, onMessage: (data: Uint8Array, subject: string) => void): Subscription;
  ready(): Promise<boolean>;
  /**
   * Whether the bus has its server now, without a round trip: `in-process`
   * has none to lose. For `/readyz` and `loom_bus_connected`
   * (docs/decisions.md, "Outages").
   */
  connection(): BusConnection;
  /**
   * Calls `listener` each time the bus is back after losing its server, once
   * every subscription is in place again. What was published meanwhile may
   * be lost: the listener reads the database for it.
   */
  onReconnect(listener: () => void): Subscription;
  close(): Promise<void>;
}

export type BusConnection = "connected" | "disconnected" | "in-process";

/** A message's bytes, or how to encode them (`Bus.publish`). */
export type MessageData = Uint8Array | (() => Uint8Array);

/** The bytes of `data`, encoding them if given as a function. */
export const messageBytes = (data: MessageData): Uint8Array => (typeof data === "function" ? data() : data);

/** What `/readyz` says of a bus: nothing for an in-process one (it cannot be lost). */
export function busReadiness(bus: Bus | undefined): { bus?: "connected" | "disconnected" } {
  const connection = bus?.connection();
  return connection === undefined || connection === "in-process" ? {} : { bus: connection };
}

export interface Subscription {
  unsubscribe(): void;
}

/** Subject matching with NATS wildcards, for the in-process bus. */
export function subjectMatches(pattern: string, subject: string): boolean {
  const want = pattern.split(".");
  const got = subject.split(".");
  for (let i = 0; i < want.length; i++) {
    if (want[i] === ">") return got.length > i;
    if (i >= got.length) return false;
    if (want[i] !== "*" && want[i] !== got[i]) return false;
  }
  return want.length === got.length;
}
