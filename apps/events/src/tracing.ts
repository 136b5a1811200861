// main.ts imports this first: tracing must start before the MongoDB driver is loaded (@loom/kit/tracing).
import { startTracing } from "@loom/kit/tracing";

startTracing("loom-events");
