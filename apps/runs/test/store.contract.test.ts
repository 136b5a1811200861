import { newId } from "@loom/contracts/ids";
import { dropDatabase, freshDatabaseName, storeKinds, testServers } from "@loom/testing/servers";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MessageContent, NewMessage } from "../src/store/messages.ts";
import type { PendingApproval } from "../src/store/pending-approval.ts";
import type { RunsStore } from "../src/store/port.ts";
import { QueueFull, type RunRecord } from "../src/store/run-records.ts";
import type { NewThread } from "../src/store/threads.ts";
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
  const newThread = (over: Partial<NewThread> = {}): NewThread => {
    const at = tick();
    return {
      id: newId(),
      organizationId: org,
      name: "t",
      metadata: {},
      createdBy: "u",
      createdAt: at,
      updatedAt: at,
      ...over,
    };
  };
  const newMessage = (thread: NewThread, content: Partial<MessageContent> = {}): NewMessage => {
    const at = tick();
    return {
      id: newId(),
      organizationId: thread.organizationId,
      threadId: thread.id,
      input: "in",
      output: "out",
      metadata: {},
      createdBy: "u",
      createdAt: at,
      updatedAt: at,
      ...content,
    };
  };
  /** The thread's messages as [index, input] pairs, in list order. */
  const listed = async (thread: NewThread) =>
    (await store.listMessages(thread.organizationId, thread.id, 0, 100))!.items.map((m) => [m.index, m.input]);

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

  it("pauses a run for approval and takes it back up: pending kept, lease let go, guards on no worker and on pending", async () => {
    const run = newRun();
    await store.insertRun(run);
    await store.transition(run.id, { from: ["QUEUED"] }, "STARTING", { worker: "w1", leaseUntil: tick() }, tick());
    await store.transition(run.id, { from: ["STARTING"], worker: "w1" }, "RUNNING", {}, tick());
    expect(await store.claimRun(run.id, "w1", tick())).toBe(true);
    // A model's input may hold keys MongoDB would refuse as field names.
    const call = { id: "call_1", name: "Calc_add", input: { $a: 1, "b.c": { d: [1, "x"] } } };
    const pending: PendingApproval = {
      step: 2,
      turns: [{ role: "user", content: "go" }],
      promptStack: [{ type: "Message" }],
      input: { type: "TextArtifact", id: "i", reference: null, meta: {}, name: "i", value: "go" },
      promptTaskId: "p",
      subtask: {
        id: "s",
        parentTaskId: "p",
        thought: "",
        input: { type: "TextArtifact", id: "t", reference: null, meta: {}, name: "t", value: "" },
        actions: [],
      },
      calls: [{ call, activity: { toolId: "t1", toolName: "Calc", activity: "add" }, needsApproval: true }],
      deadline: clock + 60_000,
    };
    const paused = await store.transition(
      run.id,
      { from: ["RUNNING"], worker: "w1" },
      "RUNNING",
      { pending, statusDetail: { reason: "AwaitingApproval" }, worker: undefined, leaseUntil: undefined },
      tick(),
    );
    expect(paused).toMatchObject({ status: "RUNNING", pending });
    expect(paused).not.toHaveProperty("worker");
    expect((await store.getRunById(run.id))!.pending).toEqual(pending);
    expect((await store.executingLoad()).perOrganization.get(org) ?? 0).toBe(0);
    expect((await store.expiredLeases(new Date(clock + 3_600_000), 100)).map((r) => r.id)).not.toContain(run.id);
    // Due only once its deadline has passed.
    expect((await store.expiredApprovals(new Date(clock), 100)).map((r) => r.id)).not.toContain(run.id);
    expect((await store.expiredApprovals(new Date(clock + 120_000), 100)).map((r) => r.id)).toContain(run.id);
    // A decision's compare-and-set holds only on the pending approval as read.
    const decided = { ...pending, calls: [{ ...pending.calls[0]!, decision: { approved: true, by: "u", at: "t" } }] };
    const stale = { ...pending, step: 1 };
    expect(
      await store.transition(
        run.id,
        { from: ["RUNNING"], unheld: true, pending: stale },
        "RUNNING",
        { pending: decided },
        tick(),
      ),
    ).toBeUndefined();
    expect(
      await store.transition(
        run.id,
        { from: ["RUNNING"], unheld: true, pending },
        "RUNNING",
        { pending: decided },
        tick(),
      ),
    ).toMatchObject({ pending: decided });
    // Back in the queue, its first claim given back; taken up by a move guarded on no worker, once.
    await store.requeuePaused(run, tick());
    expect((await store.queueCandidates([], [], 1000)).map((e) => e.runId)).toContain(run.id);
    expect(await store.claimRun(run.id, "w2", tick())).toBe(true);
    const takeUp = () =>
      store.transition(
        run.id,
        { from: ["RUNNING"], unheld: true },
        "RUNNING",
        { worker: "w2", leaseUntil: new Date(clock + 60_000) },
        tick(),
      );
    expect(await takeUp()).toMatchObject({ worker: "w2", pending: decided });
    expect(await takeUp()).toBeUndefined();
    expect((await store.queueCandidates([], [], 1000)).map((e) => e.runId)).not.toContain(run.id);
    expect((await store.expiredApprovals(new Date(clock + 120_000), 100)).map((r) => r.id)).not.toContain(run.id);
    const ended = await store.transition(
      run.id,
      { from: ["RUNNING"], worker: "w2" },
      "SUCCEEDED",
      { pending: undefined, leaseUntil: undefined },
      tick(),
    );
    expect(ended).not.toHaveProperty("pending");
  });

  it("marks a paused run with business left (events to write, a re-queue) until a move or the re-queue settles it", async () => {
    const run = newRun();
    await store.insertRun(run);
    await store.transition(run.id, { from: ["QUEUED"] }, "STARTING", { worker: "w1", leaseUntil: tick() }, tick());
    await store.transition(run.id, { from: ["STARTING"], worker: "w1" }, "RUNNING", {}, tick());
    const note = { type: "AssistantRunAwaitingApproval", payload: { calls: [] } };
    const call = { call: { id: "call_1", name: "Calc_add", input: {} }, needsApproval: true };
    const waiting = {
      step: 1,
      turns: [],
      promptStack: [],
      input: { type: "TextArtifact", id: "i", reference: null, meta: {}, name: "i", value: "go" },
      promptTaskId: "p",
      subtask: { id: "s", parentTaskId: "p", thought: "", input: {}, actions: [] },
      calls: [call],
      deadline: clock + 3_600_000,
    } as unknown as PendingApproval;
    const marked = async () => (await store.unsettledApprovals(new Date(clock + 1), 1000)).map((r) => r.id);
    // The pause with its event unwritten: marked with the move.
    const unlogged = { ...waiting, unlogged: [note] };
    await store.transition(
      run.id,
      { from: ["RUNNING"], worker: "w1" },
      "RUNNING",
      { pending: unlogged, worker: undefined, leaseUntil: undefined },
      tick(),
    );
    expect(await marked()).toContain(run.id);
    expect((await store.unsettledApprovals(new Date(clock - 1), 1000)).map((r) => r.id)).not.toContain(run.id);
    // Its event written: settled while a call awaits its decision.
    await store.transition(
      run.id,
      { from: ["RUNNING"], unheld: true, pending: unlogged },
      "RUNNING",
      { pending: waiting },
      tick(),
    );
    expect(await marked()).not.toContain(run.id);
    // A move that failed its guard leaves no mark that stays (MongoDB marks before the move: the mark is dropped).
    expect(
      await store.transition(
        run.id,
        { from: ["RUNNING"], unheld: true, pending: unlogged },
        "RUNNING",
        { pending: { ...waiting, unlogged: [note, note] } },
        tick(),
      ),
    ).toBeUndefined();
    expect(await marked()).not.toContain(run.id);
    expect(await marked()).not.toContain(run.id);
    // Every call decided: marked until it is back in the queue.
    const decided = { ...waiting, calls: [{ ...call, decision: { approved: true, by: "u", at: "t" } }] };
    const resumable = await store.transition(
      run.id,
      { from: ["RUNNING"], unheld: true, pending: waiting },
      "RUNNING",
      { pending: decided },
      tick(),
    );
    expect(await marked()).toContain(run.id);
    await store.requeuePaused(resumable!, tick());
    expect(await marked()).not.toContain(run.id);
  });

  // MongoDB writes a pause in several steps (SQLite in one transaction, so this state cannot arise there).
  if (kind === "mongo")
    it("repairs a pause whose lease removal and deadline a crash lost: not reaped, its deadline due again", async () => {
      const run = newRun();
      await store.insertRun(run);
      await store.transition(run.id, { from: ["QUEUED"] }, "STARTING", { worker: "w1", leaseUntil: tick() }, tick());
      await store.transition(run.id, { from: ["STARTING"], worker: "w1" }, "RUNNING", {}, tick());
      const pending = {
        step: 1,
        turns: [],
        promptStack: [],
        input: { type: "TextArtifact", id: "i", reference: null, meta: {}, name: "i", value: "go" },
        promptTaskId: "p",
        subtask: { id: "s", parentTaskId: "p", thought: "", input: {}, actions: [] },
        calls: [],
        deadline: clock + 60_000,
      } as unknown as PendingApproval;
      await store.transition(
        run.id,
        { from: ["RUNNING"], worker: "w1" },
        "RUNNING",
        { pending, statusDetail: { reason: "AwaitingApproval" }, worker: undefined, leaseUntil: undefined },
        tick(),
      );
      // The crash: the run's pause is written, its lease still there, its deadline row not.
      const client = await MongoClient.connect(testServers.mongoUrl!);
      try {
        await client
          .db(db)
          .collection("run_leases")
          .insertOne({ _id: run.id as never, worker: "w1", until: new Date(clock) });
        await client
          .db(db)
          .collection("run_approval_deadlines")
          .deleteOne({ _id: run.id as never });
      } finally {
        await client.close();
      }
      expect((await store.expiredLeases(new Date(clock + 3_600_000), 100)).map((r) => r.id)).not.toContain(run.id);
      expect((await store.expiredLeases(new Date(clock + 3_600_000), 100)).map((r) => r.id)).not.toContain(run.id);
      expect((await store.executingLoad()).perOrganization.get(org) ?? 0).toBe(0);
      expect((await store.expiredApprovals(new Date(clock + 120_000), 100)).map((r) => r.id)).toContain(run.id);
      expect((await store.getRunById(run.id))!).toMatchObject({ status: "RUNNING", pending });
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
    await store.insertThread(thread, []);
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

  it("stores threads per organization, with alias, name prefix and creator filters", async () => {
    const organizationId = newId();
    const t1 = newThread({ organizationId, name: "support: a.b*", alias: "support", metadata: { tier: "gold" } });
    const t2 = newThread({ organizationId, name: "Support", createdBy: "v" });
    const t3 = newThread({ organizationId, name: "support: aXb" });
    for (const t of [t1, t2, t3]) await store.insertThread(t, []);
    expect(await store.getThread(organizationId, t1.id)).toEqual({ ...t1, messageCount: 0, messagesLength: 0 });
    expect(await store.getThread(org, t1.id)).toBeUndefined();
    expect([await store.hasThread(organizationId, t1.id), await store.hasThread(org, t1.id)]).toEqual([true, false]);
    const ids = async (filter: Parameters<RunsStore["listThreads"]>[1]) =>
      (await store.listThreads(organizationId, filter, 0, 10)).items.map((t) => t.id);
    expect(await ids({})).toEqual([t3.id, t2.id, t1.id]);
    expect(await ids({ alias: "support" })).toEqual([t1.id]);
    expect(await ids({ startsWith: "support" })).toEqual([t3.id, t1.id]); // case-sensitive
    expect(await ids({ startsWith: "support: a." })).toEqual([t1.id]); // every character literally
    expect(await ids({ startsWith: "support: a.b*" })).toEqual([t1.id]);
    expect(await ids({ createdBy: "v" })).toEqual([t2.id]);
    expect(await ids({ startsWith: "support", createdBy: "v" })).toEqual([]);
    expect((await store.listThreads(organizationId, {}, 1, 1)).totalCount).toBe(3);
    expect(await store.deleteThread(org, t1.id)).toBe(false);
    expect(await store.deleteThread(organizationId, t1.id)).toBe(true);
    expect(await store.getThread(organizationId, t1.id)).toBeUndefined();
  });

  it("stores a thread's first messages in order (indexes 0..n-1) with its counts; metadata as given", async () => {
    const thread = newThread();
    // Any JSON object's keys, also those a document's field names may not be.
    const odd = { $set: 1, "a.b": { "": null }, nested: { a: [1] } };
    const first = newMessage(thread, { input: "héllo", output: "", metadata: { run_id: "r", ...odd } });
    const second = newMessage(thread, { input: "two", output: "2" });
    const stored = await store.insertThread(thread, [first, second]);
    expect(stored).toEqual({ ...thread, messageCount: 2, messagesLength: 9 }); // characters, not bytes
    expect(await store.getThread(org, thread.id)).toEqual(stored);
    expect((await store.listMessages(org, thread.id, 0, 10))!.items).toEqual([
      { ...first, index: 0 },
      { ...second, index: 1 },
    ]);
    expect(await store.getMessage(org, first.id)).toEqual({ ...first, index: 0 });
    expect(await store.listMessages(org, thread.id, 1, 1)).toEqual({ items: [{ ...second, index: 1 }], totalCount: 2 });
  });

  it("appends at the next index; an update and a delete keep the counts; a deleted message leaves a gap", async () => {
    const thread = newThread();
    await store.insertThread(thread, [newMessage(thread, { input: "a" })]);
    const b = (await store.appendMessage(newMessage(thread, { input: "b" })))!;
    const c = (await store.appendMessage(newMessage(thread, { input: "c" })))!;
    expect([b.index, c.index]).toEqual([1, 2]);
    expect(await store.getThread(org, thread.id)).toMatchObject({ messageCount: 3, messagesLength: 3 + 3 * 3 });

    const at = tick();
    const changed = await store.updateMessage(org, b.id, {
      input: undefined, // absent: kept
      output: "longer",
      metadata: { $k: true },
      updatedAt: at,
    });
    expect(changed).toEqual({ ...b, output: "longer", metadata: { $k: true }, updatedAt: at });
    expect(await store.getMessage(org, b.id)).toEqual(changed);
    expect(await store.getThread(org, thread.id)).toMatchObject({ messageCount: 3, messagesLength: 12 + 3 });

    expect(await store.deleteMessage(org, b.id)).toBe(true);
    expect(await store.deleteMessage(org, b.id)).toBe(false);
    expect(await store.getMessage(org, b.id)).toBeUndefined();
    expect(await store.getThread(org, thread.id)).toMatchObject({ messageCount: 2, messagesLength: 8 });
    const d = (await store.appendMessage(newMessage(thread, { input: "d" })))!;
    expect(d.index).toBe(3); // indexes are never reused
    expect(await listed(thread)).toEqual([
      [0, "a"],
      [2, "c"],
      [3, "d"],
    ]);
    expect(await store.updateMessage(org, newId(), { input: "x", updatedAt: tick() })).toBeUndefined();
    expect(await store.appendMessage(newMessage(newThread()))).toBeUndefined(); // no such thread
  });

  it("gives concurrent appends distinct indexes and counts every one", async () => {
    const thread = newThread();
    await store.insertThread(thread, []);
    const appended = await Promise.all(Array.from({ length: 20 }, () => store.appendMessage(newMessage(thread))));
    expect(new Set(appended.map((m) => m!.index)).size).toBe(20);
    expect(await store.getThread(org, thread.id)).toMatchObject({ messageCount: 20, messagesLength: 20 * 5 });
  });

  it("replaces a thread's messages, renumbered 0..n-1, with its fields; empty clears them", async () => {
    const thread = newThread({ alias: "old" });
    await store.insertThread(thread, [newMessage(thread, { input: "a" }), newMessage(thread, { input: "b" })]);
    const old = (await store.listMessages(org, thread.id, 0, 10))!.items;
    await store.appendMessage(newMessage(thread, { input: "c" }));
    const at = tick();
    const replaced = await store.updateThread(
      org,
      thread.id,
      { name: "renamed", alias: undefined, metadata: { "k.v": "v" }, updatedAt: at },
      [newMessage(thread, { input: "x", output: "xx" }), newMessage(thread, { input: "y", output: "" })],
    );
    expect(replaced).toEqual({
      ...thread,
      name: "renamed",
      alias: "old", // absent: kept
      metadata: { "k.v": "v" },
      messageCount: 2,
      messagesLength: 4,
      updatedAt: at,
    });
    expect(await listed(thread)).toEqual([
      [0, "x"],
      [1, "y"],
    ]);
    for (const message of old) expect(await store.getMessage(org, message.id)).toBeUndefined();
    expect((await store.appendMessage(newMessage(thread, { input: "z" })))!.index).toBe(2);

    // Fields only: the messages stay.
    expect(await store.updateThread(org, thread.id, { alias: "new", updatedAt: tick() })).toMatchObject({
      alias: "new",
      metadata: { "k.v": "v" },
      messageCount: 3,
    });
    expect(await listed(thread)).toHaveLength(3);
    expect(await store.updateThread(org, thread.id, { updatedAt: tick() }, [])).toMatchObject({
      messageCount: 0,
      messagesLength: 0,
    });
    expect(await listed(thread)).toEqual([]);
    expect(await store.updateThread(newId(), thread.id, { name: "theirs", updatedAt: tick() }, [])).toBeUndefined();
    expect(await store.getThread(org, thread.id)).toMatchObject({ name: "renamed" });
  });

  it("a reader during concurrent replaces sees one whole list, never a mix", async () => {
    const thread = newThread();
    await store.insertThread(thread, []);
    const list = (tag: string) => Array.from({ length: 5 }, () => newMessage(thread, { input: tag }));
    const reads: string[][] = [];
    let replacing = true;
    const reader = (async () => {
      while (replacing) reads.push((await listed(thread)).map(([, input]) => String(input)));
    })();
    await Promise.all(
      ["a", "b", "c", "d"].map((tag) => store.updateThread(org, thread.id, { updatedAt: tick() }, list(tag))),
    );
    replacing = false;
    await reader;
    for (const read of [...reads, (await listed(thread)).map(([, input]) => String(input))])
      expect(read.length === 0 || (read.length === 5 && new Set(read).size === 1), read.join()).toBe(true);
    expect(await store.getThread(org, thread.id)).toMatchObject({ messageCount: 5 });
  });

  it("sees only the organization's threads and messages", async () => {
    const thread = newThread();
    const message = newMessage(thread);
    await store.insertThread(thread, [message]);
    const theirs = newId();
    expect(await store.listMessages(theirs, thread.id, 0, 10)).toBeUndefined();
    expect(await store.getMessage(theirs, message.id)).toBeUndefined();
    expect(await store.updateMessage(theirs, message.id, { input: "x", updatedAt: tick() })).toBeUndefined();
    expect(await store.deleteMessage(theirs, message.id)).toBe(false);
    expect(await store.appendMessage({ ...newMessage(thread), organizationId: theirs })).toBeUndefined();
    expect(await store.deleteThread(theirs, thread.id)).toBe(false);
    expect(await store.getMessage(org, message.id)).toMatchObject({ input: "in" });
    expect(await store.getThread(org, thread.id)).toMatchObject({ messageCount: 1 });
  });

  it("deletes a thread's messages with it", async () => {
    const thread = newThread();
    const message = newMessage(thread);
    await store.insertThread(thread, [message]);
    expect(await store.deleteThread(org, thread.id)).toBe(true);
    expect(await store.getMessage(org, message.id)).toBeUndefined();
    expect(await store.listMessages(org, thread.id, 0, 10)).toBeUndefined();
    expect(await store.latestMessages(thread.id, 10)).toEqual([]);
  });

  it("gives a run its thread's newest messages, oldest first", async () => {
    const thread = newThread();
    await store.insertThread(
      thread,
      ["a", "b", "c", "d"].map((input) => newMessage(thread, { input })),
    );
    expect((await store.latestMessages(thread.id, 2)).map((m) => m.input)).toEqual(["c", "d"]);
    expect((await store.latestMessages(thread.id, 10)).map((m) => m.input)).toEqual(["a", "b", "c", "d"]);
    expect(await store.latestMessages(newId(), 10)).toEqual([]);
  });

  it("appends a succeeded run's turn to its thread, under the run's id, once appended (`appendRunMessage`)", async () => {
    const thread = newThread();
    await store.insertThread(thread, [newMessage(thread, { input: "before" })]);
    const turn = { input: '{"type":"TextArtifact"}', output: "answer", metadata: { run_id: "r" } };
    const run = newRun({ threadId: thread.id, status: "RUNNING", worker: "w" });
    await store.insertRun(run);
    const at = tick();
    const ended = (await store.transition(
      run.id,
      { from: ["RUNNING"], worker: "w" },
      "SUCCEEDED",
      { completedAt: at, threadMessage: turn },
      at,
    ))!;
    // SQLite appends it with the move; MongoDB returns it marked until `appendRunMessage`.
    if (ended.threadMessage) await store.appendRunMessage(ended);
    expect(await store.getRunById(run.id)).not.toHaveProperty("threadMessage");
    expect(await store.getMessage(org, run.id)).toEqual({
      id: run.id,
      organizationId: org,
      threadId: thread.id,
      index: 1,
      ...turn,
      createdBy: run.createdBy,
      createdAt: at,
      updatedAt: at,
    });
    // A retry (the sweep's) stores nothing twice, and the counts are right.
    await store.appendRunMessage({ ...ended, threadMessage: turn });
    expect(await listed(thread)).toEqual([
      [0, "before"],
      [1, turn.input],
    ]);
    expect(await store.getThread(org, thread.id)).toMatchObject({
      messageCount: 2,
      messagesLength: "before".length + "out".length + turn.input.length + turn.output.length,
    });

    // A thread deleted meanwhile gets nothing, and nothing fails.
    const gone = newThread();
    await store.insertThread(gone, []);
    const late = newRun({ threadId: gone.id, status: "RUNNING", worker: "w" });
    await store.insertRun(late);
    await store.deleteThread(org, gone.id);
    const lateEnd = (await store.transition(
      late.id,
      { from: ["RUNNING"], worker: "w" },
      "SUCCEEDED",
      { completedAt: tick(), threadMessage: turn },
      tick(),
    ))!;
    if (lateEnd.threadMessage) await store.appendRunMessage(lateEnd);
    expect(await store.getMessage(org, late.id)).toBeUndefined();
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
