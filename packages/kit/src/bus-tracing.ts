import { headers as natsHeaders, type MsgHdrs } from "@nats-io/nats-core";
import { context, propagation, trace } from "@opentelemetry/api";
import { headersGetter, inSpanSync, SpanKind, tracing } from "./tracing.ts";

const attributes = (subject: string) => ({ "messaging.system": "nats", "messaging.destination.name": subject });

/**
 * The headers a NATS message carries for tracing: a PRODUCER span's W3C
 * trace context, when the publisher is inside a trace (an append, a create).
 * Undefined otherwise (tracing off, or background work): no header bytes.
 */
export function publishHeaders(subject: string): MsgHdrs | undefined {
  if (!tracing().enabled || !trace.getActiveSpan()) return undefined;
  return inSpanSync("publish", { kind: SpanKind.PRODUCER, attributes: attributes(subject) }, undefined, () => {
    const headers = natsHeaders();
    propagation.inject(context.active(), headers, { set: (carrier, key, value) => carrier.set(key, value) });
    return headers;
  });
}

/**
 * Delivers a message inside a CONSUMER span whose parent is the publisher's
 * span (its headers): what the subscriber does, and what it starts, joins the
 * publisher's trace. A message without trace context is delivered as is.
 */
export function deliverTraced(subject: string, headers: MsgHdrs | undefined, deliver: () => void): void {
  if (!tracing().enabled || !headers?.has("traceparent")) return deliver();
  const parent = propagation.extract(context.active(), headers, headersGetter);
  inSpanSync("receive", { kind: SpanKind.CONSUMER, attributes: attributes(subject) }, parent, deliver);
}
