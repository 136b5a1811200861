import type { Logger } from "@loom/telemetry/logger";

/**
 * Runs `close` once on SIGTERM or SIGINT, then exits; a second signal, or a
 * close that hangs past the grace period, exits at once.
 */
export function onShutdown(logger: Logger, close: () => Promise<void>, graceMs = 25_000): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) process.exit(1);
    stopping = true;
    logger.info({ signal }, "shutting down");
    setTimeout(() => {
      logger.error("shutdown took too long, exiting");
      process.exit(1);
    }, graceMs).unref();
    close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}

/**
 * A start refused for a reason its message says in full (a bad setting, a
 * data directory in use): printed without a stack, which would only hide it.
 */
export class StartupRefused extends Error {
  override name = "StartupRefused";
}

/** Prints a startup failure (bad config, unreachable database) and exits non-zero. */
export function failStartup(logger: Logger, error: unknown): never {
  const message = error instanceof Error ? error.message : "startup failed";
  if (error instanceof StartupRefused) logger.fatal(message);
  else logger.fatal({ err: error }, message);
  // Whatever LOG_LEVEL says ("silent" too): a process that will not start says why.
  if (!logger.isLevelEnabled("fatal")) process.stderr.write(`${message}\n`);
  process.exit(1);
}
