// main.ts imports this first: tracing must start before the MongoDB driver is loaded (@loom/telemetry/tracing).
import { startTracing } from "@loom/telemetry/tracing";

startTracing("loom-knowledge");
