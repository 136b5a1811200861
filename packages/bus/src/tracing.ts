import { headersGetter, inSpanSync, SpanKind, tracing } from "@loom/telemetry/tracing";
import { type MsgHdrs, headers as natsHeaders } from "@nats-io/nats-core";
import { context, propagation, type Span, trace } from "@opentelemetry/api";

const attributes = (subject: string) => ({ "messaging.system": "nats", "messaging.destination.name": subject });

/** The headers of the messages published inside one span: an append publishes each of its events under the same one. */
const headersOfSpan = new WeakMap<Span, MsgHdrs>();

/**
 * The headers a NATS message carries for tracing: the W3C trace context of
 * the publisher's span (an append, a create), when it is inside a trace.
 * Undefined otherwise (tracing off, or background work): no header bytes.
 * No span of its own: a fan-out publishes an event at a time, and a span
 * each would double what tracing costs it (docs/benchmarks.md, "Traces:
 * no PRODUCER span per NATS publish").
 */
export function publishHeaders(): MsgHdrs | undefined {
  if (!tracing().enabled) return undefined;
  const span = trace.getActiveSpan();
  if (!span) return undefined;
  let headers = headersOfSpan.get(span);
  if (!headers) {
    headers = natsHeaders();
    propagation.inject(context.active(), headers, { set: (carrier, key, value) => carrier.set(key, value) });
    headersOfSpan.set(span, headers);
  }
  return headers;
}

/**
 * Delivers a message inside a CONSUMER span (`receive`) whose parent is the
 * publisher's span (its headers): what the subscriber does, and what it starts, joins the
 * publisher's trace. A message without trace context is delivered as is.
 */
export function deliverTraced(subject: string, headers: MsgHdrs | undefined, deliver: () => void): void {
  if (!tracing().enabled || !headers?.has("traceparent")) return deliver();
  const parent = propagation.extract(context.active(), headers, headersGetter);
  inSpanSync("receive", { kind: SpanKind.CONSUMER, attributes: attributes(subject) }, parent, deliver);
}
