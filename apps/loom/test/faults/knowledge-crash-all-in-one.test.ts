import { join } from "node:path";
import { createSqliteChunkIndex } from "@loom/knowledge/index/sqlite";
import { openSqlite } from "@loom/store/sqlite";
import { type AllInOne, startAllInOne } from "@loom/test-stacks/all-in-one";
import { freshDataDir } from "@loom/testing/data-dir";
import { type FakeOpenAI, startFakeOpenAI } from "@loom/testing/fake-openai";
import { apiClient } from "@loom/testing/http";
import { freePort } from "@loom/testing/processes";
import { afterAll, describe, it } from "vitest";
import { crashEmbeddingModel, ingestCrash } from "./ingest-crash.ts";

const leaseMs = 2_000;

/** Issue 35: the all-in-one process (SQLite) is killed during an ingest job and started again on its data directory. */
describe("the all-in-one process killed during an ingest job", () => {
  let loom: AllInOne | undefined;
  let embedder: FakeOpenAI | undefined;
  afterAll(async () => {
    await loom?.stop("SIGKILL");
    await embedder?.close();
  });

  it("resumes the job after a restart: the files done are skipped, the one in hand was all old, then all new", {
    timeout: 90_000,
  }, async () => {
    embedder = await startFakeOpenAI();
    const dir = freshDataDir();
    const port = String(await freePort());
    const env = {
      LOOM_DATA_DIR: dir,
      PORT: port,
      EMBEDDING_MODELS: crashEmbeddingModel,
      OPENAI_COMPATIBLE_BASE_URL: embedder.baseUrl,
      // A provider configured needs a default chat model; no run is made here.
      DEFAULT_MODEL: "openai-compatible:fake-model",
      KNOWLEDGE_INGEST_LEASE_MS: String(leaseMs),
      KNOWLEDGE_INGEST_POLL_MS: "100",
    };
    loom = await startAllInOne(env);
    const key = (await loom.bootstrapKey())!;
    // The process's database, read beside it (WAL): the index as any query would see it.
    const handle = openSqlite(join(dir, "loom.db"));
    const index = createSqliteChunkIndex(handle);
    try {
      const { status, afterMs } = await ingestCrash({
        api: apiClient(loom.url, key),
        embedder,
        index,
        kill: async () => void (await loom!.stop("SIGKILL")),
        restart: async () => {
          loom = await startAllInOne(env);
          return apiClient(loom.url, key);
        },
      });
      console.log(`all-in-one SIGKILL mid-ingest: job ${status} ${afterMs} ms after restart (lease ${leaseMs} ms)`);
    } finally {
      await handle.close();
    }
  });
});
