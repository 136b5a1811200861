import { logFormats } from "@loom/telemetry/logger";
import { z } from "zod";
import { StartupRefused } from "./shutdown.ts";

/**
 * Reads configuration from the environment and fails fast: every problem is
 * listed by variable name, so a misconfigured deployment says what to fix.
 */
export function loadConfig<S extends z.ZodObject>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  // An empty variable means "not set": k8s manifests often render unset values as "".
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ""));
  const result = schema.safeParse(present);
  if (result.success) return result.data;
  const lines = result.error.issues.map((issue) => `  ${issue.path.join(".") || "(environment)"}: ${issue.message}`);
  throw new ConfigError(`invalid configuration:\n${lines.join("\n")}`);
}

export class ConfigError extends StartupRefused {
  override name = "ConfigError";
}

/** What every service run on its own reads: where it listens (its API, its metrics), the shared service token, its log level. */
export function serviceSettings(port: number) {
  return {
    PORT: env.port(port),
    HOST: z.string().default("0.0.0.0"),
    SERVICE_TOKEN: z.string().min(16, "must be at least 16 characters"),
    LOG_LEVEL: env.logLevel(),
    LOG_FORMAT: env.logFormat(),
    /** `GET /metrics` (Prometheus) listens here, on HOST, apart from the API port; 0: any free port. */
    METRICS_PORT: env.port(defaultMetricsPort),
    ...httpSettings,
  };
}

/** How every HTTP listener treats connections (server/connection-limits.ts; docs/decisions.md, "Connections"). */
export const httpSettings = {
  /** A request's headers must arrive within this (ms); slower connections get 408 and are closed. */
  HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().positive().default(60_000),
  /** A kept-alive connection with no request in flight is closed after this (ms); above a load balancer's idle timeout if one keeps connections to Loom. */
  HTTP_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().positive().default(5_000),
  /** A request body that stops arriving for this long (ms) is cut. */
  HTTP_BODY_IDLE_TIMEOUT_MS: z.coerce.number().int().positive().default(60_000),
  /** Connections one listener holds at once; unset: the descriptor limit less a quarter (at least 64) for files and upstream connections. */
  HTTP_MAX_CONNECTIONS: z.coerce.number().int().min(1).optional(),
};

/** The port of every split process's `/metrics` (OpenTelemetry's Prometheus exporter's default). */
export const defaultMetricsPort = 9464;

/** A service's own database; unset MONGODB_URL keeps its data in memory. */
export function mongoSettings(database: string) {
  return { MONGODB_URL: env.mongoUrl().optional(), MONGODB_DB: z.string().default(database) };
}

/** Building blocks for config schemas, so every service spells them the same way. */
export const env = {
  port: (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback),
  url: () => z.url(),
  /**
   * A MongoDB connection string: not a WHATWG URL when it lists a replica
   * set's hosts with ports (`mongodb://a:27017,b:27017/?replicaSet=rs0`).
   */
  mongoUrl: () =>
    z
      .string()
      .regex(
        /^mongodb(\+srv)?:\/\/[^\s/]+(\/[^\s]*)?$/,
        "must be a MongoDB connection string (mongodb:// or mongodb+srv://)",
      ),
  logLevel: () => z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** Unset: pretty on a terminal, JSON lines otherwise; the logger reads it itself (telemetry/logger.ts), this only refuses a bad one. */
  logFormat: () => z.enum(logFormats).optional(),
  duration: (fallbackMs: number) => z.coerce.number().int().positive().default(fallbackMs),
  /** `true`/`1` or `false`/`0`. */
  flag: () => z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1"),
};
