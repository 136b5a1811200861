import { StartupRefused } from "@loom/runtime/shutdown";
import type { Logger } from "@loom/telemetry/logger";
import type { Bus } from "./bus.ts";
import { createMemoryBus } from "./memory.ts";
import { createNatsBus } from "./nats.ts";

/**
 * NATS when a URL is given (replicas share it), else the in-process bus. A
 * server that does not answer at start stops it, naming NATS_URL and where
 * it points (never the URL's credentials).
 */
export async function openBus(natsUrl: string | undefined, name: string, logger?: Logger): Promise<Bus> {
  if (!natsUrl) return createMemoryBus();
  try {
    return await createNatsBus(natsUrl, name, logger);
  } catch (error) {
    throw new StartupRefused(`NATS_URL: cannot connect to NATS at ${hostsOf(natsUrl)}: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/** The servers a NATS URL names (one, or a comma-separated list), without credentials. */
function hostsOf(natsUrl: string): string {
  return natsUrl
    .split(",")
    .map((server) => URL.parse(server.includes("://") ? server : `nats://${server}`)?.host ?? "(not a URL)")
    .join(",");
}
