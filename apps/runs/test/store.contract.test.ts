import { newId } from "@loom/contracts/ids";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunsStore } from "../src/store/port.ts";
import { QueueFull, type RunRecord } from "../src/store/run-records.ts";
import type { ThreadRecord } from "../src/store/threads.ts";
import { openRunsStore } from "../src/wiring.ts";

describe.each(storeKinds("runs store contract"))("runs store contract (%s)", (kind) => {
  let store: RunsStore;
  const db = freshDatabaseName();
  const org = newId();
  let clock = Date.parse("2026-01-01T00:00:00.000Z");
  const tick = () => new Date((clock += 1000));

  beforeAll(async () => {
    store = await openRunsStore({ url: kind === "mongo" ? testServers.mongoUrl : undefined, db });
    await store.init();
  });
  afterAll(async () => {
    await store.close();
    if (kind === "mongo") await dropDatabase(testServers.mongoUrl!, db);
  });

  const newRun = (over: Partial<RunRecord> = {}): RunRecord => {
    const at = tick();
    return {
      id: newId(),
      organizationId: org,
      assistantId: newId(),
      args: [],
      message: "hi",
      stream: false,
      status: "QUEUED",
      knowledgeBaseIds: [],
      retrieverIds: [],
      rulesetIds: [],
      structureIds: [],
      toolIds: [],
      createdBy: "u",
      createdAt: at,
      updatedAt: at,
      ...over,
    };
  };
  const newThread = (): ThreadRecord => {
    const at = tick();
    return { id: newId(), organizationId: org, name: "t", createdBy: "u", createdAt: at, updatedAt: at };
  };

  it("transitions only when the guard holds, and never out of a terminal state", async () => {
    const run = newRun();
    await store.insertRun(run);
    const lease = new Date(clock + 60_000);
    const started = await store.transition(
      run.id,
      { from: ["QUEUED"] },
      "STARTING",
      { worker: "w1", leaseUntil: lease },
      tick(),
    );
    expect(started).toMatchObject({ status: "STARTING", worker: "w1", leaseUntil: lease });
    expect(await store.transition(run.id, { from: ["QUEUED"] }, "STARTING", { worker: "w2" }, tick())).toBeUndefined();
    expect(await store.transition(run.id, { from: ["STARTING"], worker: "w2" }, "RUNNING", {}, tick())).toBeUndefined();
    expect(await store.transition(run.id, { from: ["STARTING"], worker: "w1" }, "RUNNING", {}, tick())).toMatchObject({
      status: "RUNNING",
    });
    const at = tick();
    const cancelled = await store.transition(
      run.id,
      { from: ["QUEUED", "STARTING", "RUNNING"] },
      "CANCELLED",
      { completedAt: at, leaseUntil: undefined, statusDetail: { reason: "Cancelled" } },
      at,
    );
    expect(cancelled).toMatchObject({ status: "CANCELLED", completedAt: at, statusDetail: { reason: "Cancelled" } });
    expect(cancelled).not.toHaveProperty("leaseUntil");
    // The late worker's write changes nothing.
    expect(
      await store.transition(
        run.id,
        { from: ["RUNNING"], worker: "w1" },
        "SUCCEEDED",
        { output: { value: "late" } },
        tick(),
      ),
    ).toBeUndefined();
    expect(await store.getRun(org, run.id)).toMatchObject({ status: "CANCELLED" });
    expect(await store.renewLease(run.id, "w1", new Date(clock + 60_000))).toBe(false);
  });

  it("grants the claim of a run once, however many ask at once", async () => {
    const id = newId();
    const answers = await Promise.all(["a", "b", "c", "d", "e"].map((w) => store.claimRun(id, w, tick())));
    expect(answers.filter(Boolean)).toHaveLength(1);
    expect(await store.claimRun(id, "f", tick())).toBe(false);
    expect(await store.claimRun(newId(), "a", tick())).toBe(true);
  });

  it("finds expired leases and reaps only if the lease is still expired", async () => {
    const run = newRun();
    await store.insertRun(run);
    const expired = new Date(clock - 1);
    await store.transition(run.id, { from: ["QUEUED"] }, "STARTING", { worker: "w", leaseUntil: expired }, tick());
    const now = tick();
    expect((await store.expiredLeases(now, 100)).map((r) => r.id)).toContain(run.id);
    expect(await store.renewLease(run.id, "w", new Date(now.getTime() + 60_000))).toBe(true);
    expect(
      await store.transition(run.id, { from: ["STARTING"], leaseExpiredBefore: now }, "ERROR", {}, now),
    ).toBeUndefined();
    expect((await store.expiredLeases(now, 100)).map((r) => r.id)).not.toContain(run.id);
  });

  it("lists queued runs oldest first and runs of an assistant newest first with a status filter", async () => {
    const assistantId = newId();
    const a = newRun({ assistantId });
    const b = newRun({ assistantId });
    const c = newRun({ assistantId, status: "SUCCEEDED" });
    for (const r of [a, b, c]) await store.insertRun(r);
    const queued = (await store.queueCandidates([], [], 1000)).map((e) => e.runId);
    expect(queued.indexOf(a.id)).toBeLessThan(queued.indexOf(b.id));
    expect(queued).not.toContain(c.id);
    expect((await store.listRuns(org, assistantId, [], 0, 10)).items.map((r) => r.id)).toEqual([c.id, b.id, a.id]);
    expect((await store.listRuns(org, assistantId, ["SUCCEEDED"], 0, 10)).items.map((r) => r.id)).toEqual([c.id]);
    expect(await store.listRuns(org, assistantId, ["QUEUED", "SUCCEEDED"], 1, 1)).toMatchObject({
      totalCount: 3,
      items: [{ id: b.id }],
    });
    expect((await store.listRuns(newId(), assistantId, [], 0, 10)).totalCount).toBe(0);
  });

  it("locks a thread for one run at a time; a stale holder can be replaced", async () => {
    const thread = newThread();
    await store.insertThread(thread);
    expect(await store.lockThread(thread.id, "r1", [])).toEqual({ locked: true });
    expect(await store.lockThread(thread.id, "r1", [])).toEqual({ locked: true });
    expect(await store.lockThread(thread.id, "r2", [])).toEqual({ locked: false, holder: "r1" });
    expect(await store.lockThread(thread.id, "r2", ["r1"])).toEqual({ locked: true });
    await store.unlockThread(thread.id, "r1"); // not the holder: no effect
    expect(await store.lockThread(thread.id, "r3", [])).toEqual({ locked: false, holder: "r2" });
    await store.unlockThread(thread.id, "r2");
    expect(await store.lockThread(thread.id, "r3", [])).toEqual({ locked: true });
    expect(await store.lockThread(newId(), "r4", [])).toEqual({ locked: true }); // a deleted thread blocks nothing
  });

  it("keeps thread history: earlier successful runs of the thread, oldest first", async () => {
    const thread = newThread();
    await store.insertThread(thread);
    const first = newRun({ threadId: thread.id, status: "SUCCEEDED", output: { value: "one" } });
    const failed = newRun({ threadId: thread.id, status: "FAILED" });
    const second = newRun({ threadId: thread.id, status: "SUCCEEDED" });
    const current = newRun({ threadId: thread.id });
    for (const r of [first, failed, second, current]) await store.insertRun(r);
    expect((await store.threadHistory(thread.id, current.createdAt)).map((r) => r.id)).toEqual([first.id, second.id]);
  });

  it("stores threads per organization, with an alias filter", async () => {
    const t1 = { ...newThread(), alias: "support" };
    const t2 = newThread();
    await store.insertThread(t1);
    await store.insertThread(t2);
    expect(await store.getThread(org, t1.id)).toEqual(t1);
    expect(await store.getThread(newId(), t1.id)).toBeUndefined();
    expect((await store.listThreads(org, "support", 0, 10)).items.map((t) => t.id)).toContain(t1.id);
    expect((await store.listThreads(org, "support", 0, 10)).items.map((t) => t.id)).not.toContain(t2.id);
    expect(await store.deleteThread(newId(), t1.id)).toBe(false);
    expect(await store.deleteThread(org, t1.id)).toBe(true);
    expect(await store.getThread(org, t1.id)).toBeUndefined();
  });

  it("keeps one idempotency record per organization and key; deletes it only while it names the run", async () => {
    const at = tick();
    const record = {
      organizationId: org,
      key: "k1",
      fingerprint: "f",
      runId: "r",
      createdAt: at,
      attempt: 0,
      attemptAt: at,
    };
    const since = new Date(at.getTime() - 1);
    expect(await store.putIdempotency(record)).toBe(true);
    expect(await store.putIdempotency({ ...record, runId: "other" })).toBe(false);
    expect(await store.getIdempotency(org, "k1", since)).toEqual(record);
    expect(await store.getIdempotency(newId(), "k1", since)).toBeUndefined();
    expect(await store.getIdempotency(org, "k1", new Date(at.getTime() + 1))).toBeUndefined(); // expired
    await store.deleteIdempotency(org, "k1", "other");
    expect(await store.getIdempotency(org, "k1", since)).toEqual(record);
    await store.deleteIdempotency(org, "k1", "r");
    expect(await store.putIdempotency({ ...record, runId: "again" })).toBe(true);
  });

  it("grants the takeover of a key once per attempt, however many ask at once", async () => {
    const at = tick();
    await store.putIdempotency({
      organizationId: org,
      key: "k2",
      fingerprint: "f",
      runId: "r",
      createdAt: at,
      attempt: 0,
      attemptAt: at,
    });
    const later = tick();
    const answers = await Promise.all([1, 2, 3, 4, 5].map(() => store.takeOverIdempotency(org, "k2", 1, later)));
    expect(answers.filter(Boolean)).toHaveLength(1);
    expect(await store.getIdempotency(org, "k2", at)).toMatchObject({ runId: "r", attempt: 1, attemptAt: later });
    expect(await store.takeOverIdempotency(org, "k2", 1, tick())).toBe(false);
    expect(await store.takeOverIdempotency(org, "k2", 2, tick())).toBe(true);
  });

  it("gives a run back as stored: JSON values and id arrays intact, absent fields absent", async () => {
    const full = newRun({
      threadId: newId(),
      args: ["a", "b"],
      input: "{{ args }}",
      stream: true,
      status: "SUCCEEDED",
      statusDetail: { reason: "Done", message: "ok" },
      output: { type: "TextArtifact", value: "hi", meta: { n: 1, list: [null, true, "x"] } },
      knowledgeBaseIds: [newId(), newId()],
      toolIds: [newId()],
      completedAt: new Date(clock),
      worker: "w",
    });
    const bare = newRun();
    for (const r of [full, bare]) await store.insertRun(r);
    expect(await store.getRun(org, full.id)).toEqual(full);
    expect(await store.getRunById(bare.id)).toEqual(bare);
    const keys = Object.keys((await store.getRun(org, bare.id))!);
    for (const field of ["threadId", "input", "statusDetail", "output", "completedAt", "worker", "leaseUntil"])
      expect(keys).not.toContain(field);
  });

  it("stores a run once per id", async () => {
    const run = newRun();
    expect(await store.insertRun(run)).toBe(true);
    expect(await store.insertRun({ ...run, message: "second" })).toBe(false);
    expect(await store.getRun(org, run.id)).toMatchObject({ message: "hi" });
  });

  it("keeps the traceparent of a run's creation, through its transitions (the worker continues that trace)", async () => {
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const traced = newRun({ traceparent });
    const untraced = newRun();
    await store.insertRun(traced);
    await store.insertRun(untraced);
    await store.transition(
      traced.id,
      { from: ["QUEUED"] },
      "STARTING",
      { worker: "w1", leaseUntil: new Date(Date.now() + 60_000) },
      tick(),
    );
    expect((await store.getRunById(traced.id))?.traceparent).toBe(traceparent);
    expect((await store.getRun(org, traced.id))?.traceparent).toBe(traceparent);
    expect((await store.getRunById(untraced.id))?.traceparent).toBeUndefined();
  });

  it("keeps the rules read at a run's creation, a schema's `$` and dotted keys included, through its transitions", async () => {
    const outputSchema = {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      properties: { "a.b": { $ref: "#/$defs/n" } },
      $defs: { n: { type: "number" } },
    };
    const ruled = newRun({ instructions: "When responding, always use rules…\nRule #1\nBe brief.", outputSchema });
    await store.insertRun(ruled);
    expect(await store.getRun(org, ruled.id)).toEqual(ruled);
    const started = await store.transition(
      ruled.id,
      { from: ["QUEUED"] },
      "STARTING",
      { worker: "w1", leaseUntil: new Date(clock + 60_000) },
      tick(),
    );
    expect(started).toMatchObject({ instructions: ruled.instructions, outputSchema });
    expect(await store.getRunById(ruled.id)).toMatchObject({ instructions: ruled.instructions, outputSchema });
    // A run without rules (as every run stored before them) has neither field.
    const plain = newRun();
    await store.insertRun(plain);
    expect(Object.keys((await store.getRunById(plain.id))!)).not.toEqual(
      expect.arrayContaining(["instructions", "outputSchema"]),
    );
  });

  it("queues runs per organization and thread: counts, skips full organizations and busy threads, drops entries", async () => {
    const [orgA, orgB] = [newId(), newId()];
    const thread = newThread();
    const a1 = newRun({ organizationId: orgA });
    const a2 = newRun({ organizationId: orgA, threadId: thread.id });
    const b1 = newRun({ organizationId: orgB });
    const done = newRun({ organizationId: orgB, status: "SUCCEEDED" });
    for (const r of [a1, a2, b1, done]) await store.insertRun(r);
    expect(await store.countQueued(orgA)).toBe(2);
    expect(await store.countQueued(orgB)).toBe(1);
    const mine = (entries: { runId: string }[]) =>
      entries.map((e) => e.runId).filter((id) => [a1.id, a2.id, b1.id, done.id].includes(id));
    expect(mine(await store.queueCandidates([], [], 1000))).toEqual([a1.id, a2.id, b1.id]);
    expect(await store.queueCandidates([], [], 1000)).toContainEqual({
      runId: a2.id,
      organizationId: orgA,
      threadId: thread.id,
      createdAt: a2.createdAt,
    });
    expect(mine(await store.queueCandidates([orgA], [], 1000))).toEqual([b1.id]);
    expect(mine(await store.queueCandidates([], [thread.id], 1000))).toEqual([a1.id, b1.id]);

    // Leaving QUEUED takes a run off the queue; executing runs count per organization, with their threads.
    const at = tick();
    await store.transition(
      a2.id,
      { from: ["QUEUED"] },
      "STARTING",
      { worker: "w", leaseUntil: new Date(at.getTime() + 60_000) },
      at,
    );
    await store.transition(b1.id, { from: ["QUEUED"] }, "CANCELLED", { completedAt: at }, at);
    expect(mine(await store.queueCandidates([], [], 1000))).toEqual([a1.id]);
    expect(await store.countQueued(orgA)).toBe(1);
    expect(await store.countQueued(orgB)).toBe(0);
    let load = await store.executingLoad();
    expect(load.perOrganization.get(orgA)).toBe(1);
    expect(load.perOrganization.has(orgB)).toBe(false);
    expect(load.threads.has(thread.id)).toBe(true);
    await store.transition(a2.id, { from: ["STARTING"] }, "SUCCEEDED", { completedAt: at, leaseUntil: undefined }, at);
    load = await store.executingLoad();
    expect(load.perOrganization.has(orgA)).toBe(false);
    expect(load.threads.has(thread.id)).toBe(false);

    await store.dropQueueEntry(a1.id);
    expect(mine(await store.queueCandidates([], [], 1000))).toEqual([]);
    expect(await store.countQueued(orgA)).toBe(0);
  });

  it("gives a released claim again", async () => {
    const id = newId();
    expect(await store.claimRun(id, "a", tick())).toBe(true);
    await store.releaseClaim(id);
    expect(await store.claimRun(id, "b", tick())).toBe(true);
    expect(await store.claimRun(id, "c", tick())).toBe(false);
  });

  it("grants a claim left standing past `staleBefore` again, once, however many ask at once", async () => {
    const id = newId();
    const first = tick();
    expect(await store.claimRun(id, "a", first)).toBe(true);
    expect(await store.claimRun(id, "b", tick(), first)).toBe(false); // not older than staleBefore: still a's
    const later = tick();
    const answers = await Promise.all(
      ["c", "d", "e", "f"].map((w) => store.claimRun(id, w, later, new Date(first.getTime() + 1))),
    );
    expect(answers.filter(Boolean)).toHaveLength(1);
    expect(await store.claimRun(id, "g", tick(), new Date(first.getTime() + 1))).toBe(false); // the new claim is fresh
  });

  it("marks every move to a terminal status as an unlogged end, until its event is logged", async () => {
    const done = newRun();
    const active = newRun();
    for (const r of [done, active]) await store.insertRun(r);
    await store.transition(
      done.id,
      { from: ["QUEUED"] },
      "STARTING",
      { worker: "w", leaseUntil: new Date(clock + 60_000) },
      tick(),
    );
    expect(await store.transition(active.id, { from: ["RUNNING"] }, "ERROR", {}, tick())).toBeUndefined(); // guard fails: no end
    const endedAt = tick();
    await store.transition(
      done.id,
      { from: ["STARTING"], worker: "w" },
      "SUCCEEDED",
      { completedAt: endedAt, leaseUntil: undefined },
      endedAt,
    );
    const ids = async (before: Date) => (await store.unloggedEnds(before, 1000)).map((r) => r.id);
    expect(await ids(endedAt)).not.toContain(done.id); // marked at its end, not before
    expect(await ids(tick())).toContain(done.id);
    expect((await store.unloggedEnds(tick(), 1000)).find((r) => r.id === done.id)).toMatchObject({
      status: "SUCCEEDED",
    });
    expect(await ids(tick())).not.toContain(active.id);
    await store.endLogged(done.id);
    expect(await ids(tick())).not.toContain(done.id);
  });

  it("refuses a queued run past `maxQueued` with the write, and frees a place when a run leaves the queue", async () => {
    const organizationId = newId();
    const queued = [newRun({ organizationId }), newRun({ organizationId })];
    for (const r of queued) expect(await store.insertRun(r, 2)).toBe(true);
    const third = newRun({ organizationId });
    await expect(store.insertRun(third, 2)).rejects.toBeInstanceOf(QueueFull);
    expect(await store.getRun(organizationId, third.id)).toBeUndefined();
    expect(await store.insertRun(queued[0]!, 2)).toBe(false); // the same run again: stored already, not refused
    await store.transition(queued[0]!.id, { from: ["QUEUED"] }, "CANCELLED", { completedAt: tick() }, tick());
    expect(await store.insertRun(third, 2)).toBe(true);
    expect(await store.countQueued(organizationId)).toBe(2);
  });
});
