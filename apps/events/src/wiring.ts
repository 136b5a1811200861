import type { Bus } from "@loom/bus/bus";
import type { RpcService } from "@loom/server/rpc-service";
import { openStore, type StoreSettings } from "@loom/store/open";
import type { Logger } from "@loom/telemetry/logger";
import { createEventsService, type EventsDeps } from "./service.ts";
import type { EventsStore } from "./store/port.ts";
import { createSqliteEventsStore } from "./store/sqlite.ts";

/**
 * MongoDB when a URL is given, else SQLite. On SQLite an append resolves
 * once written, its acknowledgement left to `EventsStore.durable` (the
 * service waits for it before answering or publishing); reads resolve once
 * what they read is on disk.
 */
export const openEventsStore = (settings: StoreSettings): Promise<EventsStore> =>
  openStore(
    settings,
    {
      sqlite: createSqliteEventsStore,
      mongo: async (m) => (await import("./store/mongo.ts")).createMongoEventsStore(m.db, m.ping, m.close),
    },
    { append: "by durable()" },
  );

/**
 * Store → service: shared by main.ts, the all-in-one process and the tests.
 * Stored events are published on `bus` when one is given.
 */
export async function wireEvents(
  store: EventsStore,
  bus?: Bus,
  logger?: Logger,
  options: Pick<EventsDeps, "runLogsCoveredByRuns"> = {},
): Promise<RpcService> {
  await store.init();
  return createEventsService({ store, bus, logger, ...options });
}
