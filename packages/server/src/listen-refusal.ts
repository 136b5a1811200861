import { StartupRefused } from "@loom/runtime/shutdown";

/**
 * What a failed listen means to whoever set the port: one sentence naming
 * the variable (PORT, METRICS_PORT, HOST), instead of Node's error and stack.
 * Anything else is returned as it is.
 */
export function listenRefusal(error: Error, where: { port: number; host: string; setting: string }): Error {
  const { port, host, setting } = where;
  switch ((error as NodeJS.ErrnoException).code) {
    case "EADDRINUSE":
      return new StartupRefused(
        `${setting}: ${host}:${port} is already in use by another process: stop that one, or set ${setting} to a free port`,
        { cause: error },
      );
    case "EACCES":
      return new StartupRefused(
        `${setting}: not allowed to listen on ${host}:${port} (ports below 1024 need privileges): set ${setting} to 1024 or above`,
        { cause: error },
      );
    case "EADDRNOTAVAIL":
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return new StartupRefused(
        `HOST: ${host} is not an address of this machine: set HOST to one (0.0.0.0 for all, 127.0.0.1 for this machine only)`,
        { cause: error },
      );
    default:
      return error;
  }
}
