import type { Bus } from "@loom/kit/bus";
import type { Logger } from "@loom/kit/logger";
import { openStore, type StoreSettings } from "@loom/kit/store-open";
import type { RpcService } from "@loom/kit/rpc-service";
import { createEventsService } from "./service.ts";
import { createMongoEventsStore } from "./store/mongo.ts";
import { createSqliteEventsStore } from "./store/sqlite.ts";
import type { EventsStore } from "./store/port.ts";

/** MongoDB when a URL is given, else SQLite. */
export const openEventsStore = (settings: StoreSettings): Promise<EventsStore> =>
  openStore(settings, { sqlite: createSqliteEventsStore, mongo: (m) => createMongoEventsStore(m.db, m.ping, m.close) });

/**
 * Store → service: shared by main.ts, the all-in-one process and the tests.
 * Stored events are published on `bus` when one is given.
 */
export async function wireEvents(store: EventsStore, bus?: Bus, logger?: Logger): Promise<RpcService> {
  await store.init();
  return createEventsService({ store, bus, logger });
}
