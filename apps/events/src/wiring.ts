import type { Bus } from "@loom/kit/bus";
import type { Logger } from "@loom/kit/logger";
import { connectMongo } from "@loom/kit/mongo";
import type { RpcService } from "@loom/kit/rpc-service";
import { createEventsService } from "./service.ts";
import { createMemoryEventsStore } from "./store/memory.ts";
import { createMongoEventsStore } from "./store/mongo.ts";
import type { EventsStore } from "./store/port.ts";

/** MongoDB when a URL is given, else the in-memory store. */
export async function openEventsStore(mongo: { url?: string | undefined; db: string }): Promise<EventsStore> {
  if (!mongo.url) return createMemoryEventsStore();
  const handle = await connectMongo(mongo.url, mongo.db);
  return createMongoEventsStore(handle.db, handle.ping, handle.close);
}

/**
 * Store → service: shared by main.ts, the all-in-one process and the tests.
 * Stored events are published on `bus` when one is given.
 */
export async function wireEvents(store: EventsStore, bus?: Bus, logger?: Logger): Promise<RpcService> {
  await store.init();
  return createEventsService({ store, bus, logger });
}
