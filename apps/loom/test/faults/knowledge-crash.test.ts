import { openChunkIndex } from "@loom/knowledge/index/open";
import type { ChunkIndex } from "@loom/knowledge/index/port";
import { needsOwnServers } from "@loom/testing/own-servers";
import { afterAll, beforeAll, describe, it } from "vitest";
import { type FaultStack, faultLeaseMs, startFaultStack } from "./fault-stack.ts";
import { crashEmbeddingModel, ingestCrash } from "./ingest-crash.ts";

/** Issue 35: the split deployment's knowledge process is killed during an ingest job (MongoDB). */
describe.skipIf(!needsOwnServers("knowledge process killed mid-ingest", "nats", "ferretdb"))(
  "the knowledge process killed during an ingest job",
  () => {
    let stack: FaultStack;
    let index: ChunkIndex;
    beforeAll(async () => {
      stack = await startFaultStack({
        knowledge: {
          EMBEDDING_MODELS: crashEmbeddingModel,
          KNOWLEDGE_INGEST_LEASE_MS: String(faultLeaseMs),
          KNOWLEDGE_INGEST_POLL_MS: "100",
        },
      });
      index = await openChunkIndex({ url: stack.mongo.url, db: "loom_knowledge" });
    }, 60_000);
    afterAll(async () => {
      await index?.close();
      await stack?.close();
    });

    it("resumes the job after a restart: the files done are skipped, the one in hand was all old, then all new", {
      timeout: 60_000,
    }, async () => {
      const { status, afterMs } = await ingestCrash({
        api: stack.api,
        embedder: stack.model,
        index,
        kill: () => stack.split.stopService("knowledge", "SIGKILL"),
        restart: async () => {
          await stack.split.startService("knowledge");
          return stack.api;
        },
      });
      console.log(
        `split knowledge SIGKILL mid-ingest: job ${status} ${afterMs} ms after restart (lease ${faultLeaseMs} ms)`,
      );
    });
  },
);
