import { newId } from "@loom/contracts/ids";
import { createLogger } from "@loom/telemetry/logger";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createIngestWorker, type IngestWorker, maxJobAttempts } from "../src/ingest/worker.ts";
import type { KnowledgeBaseJobRecord } from "../src/store/jobs.ts";
import type { KnowledgeBasesStore } from "../src/store/port.ts";
import { openKnowledgeStore } from "../src/wiring.ts";

const logger = createLogger("test", process.env.TEST_LOG_LEVEL ?? "silent");

/** The worker's lease and its limit on attempts, on the SQLite store (the store contract covers both stores). */
describe("the ingest worker", () => {
  let store: KnowledgeBasesStore;
  let worker: IngestWorker | undefined;
  const org = newId();
  const ran: string[] = [];

  beforeEach(async () => {
    store = await openKnowledgeStore({ db: "unused" });
    await store.init();
    ran.length = 0;
  });
  afterEach(async () => {
    await worker?.stop();
    await store.close();
  });

  const job = async (over: Partial<KnowledgeBaseJobRecord> = {}) => {
    const at = new Date();
    const record: KnowledgeBaseJobRecord = {
      id: newId(),
      organizationId: org,
      knowledgeBaseId: newId(),
      status: "QUEUED",
      statusDetail: "",
      bytesIngested: 0,
      errors: [],
      cancelRequested: false,
      attempts: 0,
      createdBy: "u",
      createdAt: at,
      updatedAt: at,
      ...over,
    };
    await store.insertJob(record);
    return record;
  };
  const start = () => {
    worker = createIngestWorker({
      store,
      logger,
      leaseMs: 300,
      pollMs: 50,
      run: async (j) => {
        ran.push(j.id);
        return { status: "SUCCEEDED", statusDetail: "" };
      },
    });
    worker.start();
  };
  const ended = async (id: string) => {
    for (let i = 0; i < 100; i++) {
      const j = await store.getJob(org, id);
      if (j?.completedAt) return j;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error("the job did not end");
  };

  it("takes up a RUNNING job once its lost worker's lease has run out, and finishes it", async () => {
    const lost = await job({ status: "RUNNING", attempts: 1 });
    await store.lockKnowledgeBase(lost.knowledgeBaseId, lost.id, "dead-worker", new Date(Date.now() + 400), new Date());
    start();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(ran).toEqual([]);
    expect(await ended(lost.id)).toMatchObject({ status: "SUCCEEDED", attempts: 2 });
    expect(ran).toEqual([lost.id]);
  });

  it(`ends FAILED, saying why, a job whose worker was lost ${maxJobAttempts} times, without running it again`, async () => {
    const doomed = await job({ status: "RUNNING", attempts: maxJobAttempts });
    start();
    const end = await ended(doomed.id);
    expect(end.status).toBe("FAILED");
    expect(end.statusDetail).toMatch(/stopped 3 times/);
    expect(ran).toEqual([]);
  });

  it("runs a knowledge base's jobs one after the other, oldest first", async () => {
    const kb = newId();
    const first = await job({ knowledgeBaseId: kb, createdAt: new Date(1) });
    const second = await job({ knowledgeBaseId: kb, createdAt: new Date(2) });
    start();
    await ended(second.id);
    expect(ran).toEqual([first.id, second.id]);
  });
});
