import { OpenTelemetry } from "@ai-sdk/otel";
import { tracing } from "@loom/telemetry/tracing";
import { registerTelemetry, type TelemetryOptions } from "ai";

let registered = false;

/**
 * The AI SDK's own spans (the call, each step, the provider request) when
 * tracing is on: the SDK 7 reports them through a registered integration
 * (@ai-sdk/otel), per call enabled by `telemetry`. Prompts and answers are
 * not recorded: a trace backend is not where users' words should be kept
 * (docs/decisions.md, "Traces").
 */
export function aiSdkTelemetry(functionId: string): TelemetryOptions {
  if (!tracing().enabled) return { isEnabled: false };
  if (!registered) {
    registered = true;
    registerTelemetry(new OpenTelemetry());
  }
  return { isEnabled: true, functionId, recordInputs: false, recordOutputs: false };
}
