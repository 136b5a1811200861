import { type Logger, pino } from "pino";
import pretty from "pino-pretty";

export type { Logger };

export const logFormats = ["json", "pretty"] as const;
export type LogFormat = (typeof logFormats)[number];

/**
 * `LOG_FORMAT` when it is one of ours, else pretty on a terminal and JSON
 * lines otherwise (a file, a pipe, a log collector). A bad LOG_FORMAT is
 * refused by the configuration check (runtime/config.ts `env.logFormat`), which
 * runs after the logger exists and reports through it.
 */
export function logFormatOf(
  env: NodeJS.ProcessEnv = process.env,
  terminal: boolean = process.stdout.isTTY === true,
): LogFormat {
  const asked = env.LOG_FORMAT;
  if (asked === "json" || asked === "pretty") return asked;
  return terminal ? "pretty" : "json";
}

export interface LoggerOptions {
  format?: LogFormat;
  /** Where lines go; stdout unless a test says otherwise. */
  destination?: NodeJS.WritableStream;
}

/**
 * A child's binding replaces its parent's of the same name (the all-in-one's
 * `service: "runs"` under `service: "loom"`). Pino appends a child's bindings
 * to its parent's serialized ones, so each line would carry both keys, and
 * log collectors that detect duplicate keys reject such lines. Children are
 * made at start only: parsing the bindings once each costs nothing later.
 */
function oneKeyPerField(child: Logger): void {
  const bound = child as unknown as Record<symbol, string>;
  const serialized = bound[pino.symbols.chindingsSym]!;
  // JSON.parse keeps a repeated key once, in its first place, with its last (the child's) value.
  const fields = JSON.stringify(JSON.parse(`{${serialized.slice(1)}}`)).slice(1, -1);
  bound[pino.symbols.chindingsSym] = fields === "" ? "" : `,${fields}`;
}

/** Structured logs on stdout; `service` names the emitter in every line. */
export function createLogger(
  service: string,
  level: string = process.env.LOG_LEVEL ?? "info",
  options: LoggerOptions = {},
): Logger {
  const format = options.format ?? logFormatOf();
  const settings = {
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Credentials never reach the logs, whatever a caller passes in.
    redact: {
      paths: ["credential", "*.credential", "authorization", "*.authorization", "value", "*.value"],
      censor: "[redacted]",
    },
    onChild: oneKeyPerField,
  };
  // Pretty in this thread and synchronous: a line written just before process.exit (a refused start) is not lost.
  const destination =
    format === "pretty"
      ? pretty({
          sync: true,
          colorize: options.destination ? false : undefined,
          translateTime: "SYS:HH:MM:ss.l",
          ignore: "pid,hostname,service",
          messageFormat: "{service}: {msg}",
          ...(options.destination ? { destination: options.destination } : {}),
        })
      : (options.destination ?? pino.destination({ dest: 1, sync: true }));
  return pino(settings, destination);
}
