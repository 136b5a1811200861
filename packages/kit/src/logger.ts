import { pino, type Logger } from "pino";

export type { Logger };

/** Structured JSON logs on stdout; `service` names the emitter in every line. */
export function createLogger(service: string, level: string = process.env.LOG_LEVEL ?? "info"): Logger {
  return pino({
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Credentials never reach the logs, whatever a caller passes in.
    redact: { paths: ["credential", "*.credential", "authorization", "*.authorization", "value", "*.value"], censor: "[redacted]" },
  });
}
