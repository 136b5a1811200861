import type { Bus } from "./bus.ts";
import { createMemoryBus } from "./bus-memory.ts";
import { createNatsBus } from "./bus-nats.ts";
import type { Logger } from "./logger.ts";

/** NATS when a URL is given (replicas share it), else the in-process bus. */
export async function openBus(natsUrl: string | undefined, name: string, logger?: Logger): Promise<Bus> {
  return natsUrl ? createNatsBus(natsUrl, name, logger) : createMemoryBus();
}
