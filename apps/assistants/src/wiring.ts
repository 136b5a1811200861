import { connectMongo } from "@loom/kit/mongo";
import type { RpcService } from "@loom/kit/rpc-service";
import { createAssistantsService } from "./service.ts";
import { createMemoryAssistantsStore } from "./store/memory.ts";
import { createMongoAssistantsStore } from "./store/mongo.ts";
import type { AssistantsStore } from "./store/port.ts";

/** MongoDB when a URL is given, else the in-memory store. */
export async function openAssistantsStore(mongo: { url?: string | undefined; db: string }): Promise<AssistantsStore> {
  if (!mongo.url) return createMemoryAssistantsStore();
  const handle = await connectMongo(mongo.url, mongo.db);
  return createMongoAssistantsStore(handle.db, handle.ping, handle.close);
}

/** Store → service: shared by main.ts, the all-in-one process and the tests. */
export async function wireAssistants(store: AssistantsStore): Promise<RpcService> {
  await store.init();
  return createAssistantsService({ store });
}
