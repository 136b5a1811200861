import { newId } from "@loom/contracts/ids";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KnowledgeBaseJobRecord } from "../src/store/jobs.ts";
import type { KnowledgeBasesStore } from "../src/store/port.ts";
import { openKnowledgeStore } from "../src/wiring.ts";

describe.each(storeKinds("knowledge base jobs store contract"))("knowledge base jobs store contract (%s)", (kind) => {
  let store: KnowledgeBasesStore;
  const db = freshDatabaseName();
  const org = newId();
  const otherOrg = newId();
  const t0 = new Date("2026-03-04T05:06:07.089Z");
  const later = (ms: number) => new Date(t0.getTime() + ms);

  beforeAll(async () => {
    store = await openKnowledgeStore({ url: kind === "mongo" ? testServers.mongoUrl : undefined, db });
    await store.init();
  });
  afterAll(async () => {
    await store.close();
    if (kind === "mongo") await dropDatabase(testServers.mongoUrl!, db);
  });

  const job = (over: Partial<KnowledgeBaseJobRecord> = {}): KnowledgeBaseJobRecord => ({
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
    createdAt: t0,
    updatedAt: t0,
    ...over,
  });

  it("round-trips a job only within its organization, and lists a knowledge base's newest first, by status", async () => {
    const kb = newId();
    const first = job({ knowledgeBaseId: kb });
    const second = job({
      knowledgeBaseId: kb,
      createdAt: later(1),
      status: "FAILED",
      statusDetail: "why",
      errors: [{ path: "b/x.bin", type: "unsupported_type", message: "no" }],
      completedAt: later(2),
    });
    await store.insertJob(first);
    await store.insertJob(second);
    await store.insertJob(job());
    expect(await store.getJob(org, second.id)).toEqual(second);
    expect(await store.getJob(otherOrg, second.id)).toBeUndefined();
    expect(await store.listJobs(org, kb, [], 0, 10)).toEqual({ items: [second, first], totalCount: 2 });
    expect(await store.listJobs(org, kb, ["QUEUED"], 0, 10)).toEqual({ items: [first], totalCount: 1 });
    expect(await store.listJobs(otherOrg, kb, [], 0, 10)).toEqual({ items: [], totalCount: 0 });
  });

  it("cancels a queued job at once, marks a running one, leaves a finished one", async () => {
    const queued = job();
    const running = job({ status: "RUNNING" });
    const done = job({ status: "SUCCEEDED", completedAt: t0 });
    for (const j of [queued, running, done]) await store.insertJob(j);
    expect(await store.cancelJob(otherOrg, queued.id, later(5))).toBeUndefined();
    expect(await store.cancelJob(org, queued.id, later(5))).toMatchObject({
      status: "CANCELLED",
      completedAt: later(5),
    });
    expect(await store.cancelJob(org, running.id, later(5))).toMatchObject({
      status: "RUNNING",
      cancelRequested: true,
    });
    expect(await store.cancelJob(org, done.id, later(5))).toEqual(done);
    // A worker's write on a job cancelled while queued does not bring it back.
    expect(await store.updateUnfinishedJob(queued.id, { status: "RUNNING" }, later(6))).toBe(false);
    expect(await store.updateUnfinishedJob(running.id, { bytesIngested: 42 }, later(6))).toBe(true);
    expect((await store.getJob(org, running.id))?.bytesIngested).toBe(42);
  });

  it("lets one worker hold a knowledge base's lock until its lease runs out", async () => {
    const kb = newId();
    expect(await store.lockKnowledgeBase(kb, "j1", "w1", later(1000), t0)).toBe(true);
    expect(await store.lockKnowledgeBase(kb, "j2", "w2", later(1000), later(500))).toBe(false);
    expect(await store.renewLock(kb, "w2", later(3000))).toBe(false);
    expect(await store.renewLock(kb, "w1", later(2000))).toBe(true);
    expect(await store.lockKnowledgeBase(kb, "j2", "w2", later(3000), later(1500))).toBe(false);
    // Run out: another worker takes it over, and the first can no longer renew.
    expect(await store.lockKnowledgeBase(kb, "j2", "w2", later(5000), later(2500))).toBe(true);
    expect(await store.renewLock(kb, "w1", later(6000))).toBe(false);
    await store.releaseLock(kb, "w1");
    expect(await store.lockKnowledgeBase(kb, "j3", "w3", later(5000), later(2600))).toBe(false);
    await store.releaseLock(kb, "w2");
    expect(await store.lockKnowledgeBase(kb, "j3", "w3", later(5000), later(2600))).toBe(true);
  });

  it("lists unfinished jobs oldest first, and deletes a knowledge base's jobs", async () => {
    const kb = newId();
    const old = job({ knowledgeBaseId: kb, createdAt: new Date(0) });
    const mine = job({ knowledgeBaseId: kb, status: "RUNNING", createdAt: new Date(1) });
    await store.insertJob(old);
    await store.insertJob(mine);
    const unfinished = (await store.unfinishedJobs(100)).map((j) => j.id);
    expect(unfinished.slice(0, 2)).toEqual([old.id, mine.id]);
    await store.deleteJobsOf(otherOrg, kb);
    expect(await store.getJob(org, old.id)).toBeDefined();
    await store.deleteJobsOf(org, kb);
    expect(await store.getJob(org, old.id)).toBeUndefined();
    expect(await store.listJobs(org, kb, [], 0, 10)).toEqual({ items: [], totalCount: 0 });
  });
});
