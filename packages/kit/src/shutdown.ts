import type { Logger } from "./logger.ts";

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

/** Prints a startup failure (bad config, unreachable database) and exits non-zero. */
export function failStartup(logger: Logger, error: unknown): never {
  logger.fatal({ err: error }, error instanceof Error ? error.message : "startup failed");
  process.exit(1);
}
