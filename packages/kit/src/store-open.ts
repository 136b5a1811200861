import { connectMongo, type MongoHandle } from "./mongo.ts";

/** Where a service keeps its data: MongoDB when a URL is given, else the embedded adapter. */
export interface StoreSettings {
  url?: string | undefined;
  db: string;
}

/**
 * Opens a service's store through the adapter its settings name. Every
 * service has the same two adapters behind its store port, so this is the
 * one place that chooses between them.
 */
export async function openStore<S>(settings: StoreSettings, adapters: { memory: () => S; mongo: (handle: MongoHandle) => S }): Promise<S> {
  if (!settings.url) return adapters.memory();
  return adapters.mongo(await connectMongo(settings.url, settings.db));
}

/** What every store port has besides its own business: set up (indexes, idempotent), a readiness probe, and close. */
export interface StoreLifecycle {
  init(): Promise<void>;
  ready(): Promise<boolean>;
  close(): Promise<void>;
}
