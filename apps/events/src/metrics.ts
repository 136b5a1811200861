import { Counter, metricsRegistry } from "@loom/telemetry/metrics";

/** The events service's series (infra/README.md, "Metrics and alerts"), in the process's one registry. */
export const eventsAppended = new Counter({
  name: "loom_events_appended_total",
  help: "Events appended to run logs (stored and published)",
  registers: [metricsRegistry],
});
