import { createLogger, type Logger } from "@loom/telemetry/logger";
import { tracing } from "@loom/telemetry/tracing";
import type { z } from "zod";
import { loadConfig } from "./config.ts";
import { releaseMemoryWhenQuiet } from "./release-memory-when-quiet.ts";
import { failStartup, onShutdown } from "./shutdown.ts";

/** A process once its start has opened everything. */
export interface StartedProcess {
  /** Lets go of what the start opened, in order (listeners first); tracing is flushed after it. */
  close(): Promise<void>;
  /** Says the process is up (its address, its metrics); logged once the graceful shutdown is in place. */
  announce(): void;
}

/** Starts a process's parts from its settings; a failure fails the start. */
export type StartProcess<S extends z.ZodObject> = (config: z.infer<S>, logger: Logger) => Promise<StartedProcess>;

/**
 * The start-up every Loom process shares (a service's `main.ts` through
 * `runService`, the gateway's, the all-in-one's): its logger, its settings (a
 * bad one stops it, naming the variables), its parts (`start`), memory given
 * back after bursts (`releaseMemoryWhenQuiet`), a graceful shutdown on
 * SIGTERM, then the lines that say it is up. A start that fails says why in
 * one line and exits 1 (`failStartup`).
 */
export async function runProcess<S extends z.ZodObject>(
  name: string,
  schema: S,
  start: StartProcess<S>,
): Promise<void> {
  const logger = createLogger(name);
  try {
    const config = loadConfig(schema);
    logger.level = (config as { LOG_LEVEL: string }).LOG_LEVEL;
    const started = await start(config, logger);
    const memory = releaseMemoryWhenQuiet();
    // Before the lines that say it is up: a SIGTERM sent on reading them must find the graceful shutdown in place.
    onShutdown(logger, async () => {
      memory.stop();
      await started.close();
      await tracing().shutdown();
    });
    started.announce();
  } catch (error) {
    failStartup(logger, error);
  }
}
