import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newId } from "@loom/contracts/ids";
import { migrate, openSqlite, type SqliteHandle } from "@loom/store/sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { idempotencyWindowMs } from "../src/store/idempotency.ts";
import type { RunRecord } from "../src/store/run-records.ts";
import { createSqliteRunsStore, runsMigrations } from "../src/store/sqlite.ts";

const org = newId();
let clock = Date.parse("2026-01-01T00:00:00.000Z");
const tick = () => new Date((clock += 1000));
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

/** What only the SQLite adapter promises beyond the store contract: how it reads, prunes and keeps its tables. */
describe("runs store on SQLite", () => {
  it("reads runs, threads and keys on an index; only the queue and the leases (what is queued or executing) are walked", async () => {
    const handle = openSqlite(":memory:");
    const statements = new Set<string>();
    const recording: SqliteHandle = { ...handle, prepare: (sql) => (statements.add(sql), handle.prepare(sql)) };
    const store = createSqliteRunsStore(recording);
    await store.init();
    // Every method, so every statement the adapter has is prepared once.
    const thread = {
      id: newId(),
      organizationId: org,
      name: "t",
      alias: "a",
      metadata: {},
      createdBy: "u",
      createdAt: tick(),
      updatedAt: tick(),
    };
    const content = { input: "i", output: "o", metadata: {} };
    const message = { id: newId(), organizationId: org, threadId: thread.id, ...content, createdBy: "u" };
    await store.insertThread(thread, [{ ...message, createdAt: tick(), updatedAt: tick() }]);
    const run = newRun({ threadId: thread.id });
    await store.insertRun(run);
    await store.getRun(org, run.id);
    await store.listRuns(org, run.assistantId, [], 0, 10);
    await store.listRuns(org, run.assistantId, ["QUEUED"], 0, 10);
    await store.countQueued(org);
    await store.queueCandidates([newId()], [newId()], 10);
    await store.claimRun(run.id, "w", tick());
    await store.transition(
      run.id,
      { from: ["QUEUED"] },
      "STARTING",
      { worker: "w", leaseUntil: new Date(clock + 60_000) },
      tick(),
    );
    await store.renewLease(run.id, "w", new Date(clock + 60_000));
    await store.executingLoad();
    await store.expiredLeases(tick(), 10);
    await store.transition(
      run.id,
      { from: ["STARTING"], worker: "w", leaseExpiredBefore: tick() },
      "ERROR",
      { completedAt: tick(), leaseUntil: undefined },
      tick(),
    );
    const succeeded = newRun({ threadId: thread.id, status: "RUNNING", worker: "w" });
    await store.insertRun(succeeded);
    await store.transition(
      succeeded.id,
      { from: ["RUNNING"], worker: "w" },
      "SUCCEEDED",
      { completedAt: tick(), threadMessage: content },
      tick(),
    );
    await store.unloggedEnds(tick(), 10);
    await store.endLogged(run.id);
    await store.dropQueueEntry(run.id);
    await store.releaseClaim(run.id);
    await store.appendMessage({ ...message, id: newId(), createdAt: tick(), updatedAt: tick() });
    await store.listMessages(org, thread.id, 0, 10);
    await store.getMessage(org, message.id);
    await store.updateMessage(org, message.id, { input: "j", updatedAt: tick() });
    await store.deleteMessage(org, message.id);
    await store.latestMessages(thread.id, 10);
    await store.updateThread(org, thread.id, { name: "n", alias: "b", metadata: { k: 1 }, updatedAt: tick() }, [
      { ...message, id: newId(), createdAt: tick(), updatedAt: tick() },
    ]);
    await store.lockThread(thread.id, run.id, ["stale"]);
    await store.lockThread(thread.id, newId(), []);
    await store.unlockThread(thread.id, run.id);
    await store.getThread(org, thread.id);
    await store.hasThread(org, thread.id);
    await store.listThreads(org, {}, 0, 10);
    await store.listThreads(org, { alias: "a" }, 0, 10);
    await store.listThreads(org, { alias: "a", startsWith: "t", createdBy: "u" }, 0, 10);
    const at = tick();
    await store.putIdempotency({
      organizationId: org,
      key: "k",
      fingerprint: "f",
      runId: run.id,
      createdAt: at,
      attempt: 0,
      attemptAt: at,
    });
    await store.getIdempotency(org, "k", at);
    await store.takeOverIdempotency(org, "k", 1, tick());
    await store.deleteIdempotency(org, "k", run.id);
    await store.deleteThread(org, thread.id);

    expect(statements.size).toBeGreaterThan(25);
    const walks = [...statements].flatMap((sql) =>
      handle.db
        .prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .all()
        .map((step) => String(step.detail))
        // A SCAN of anything but the queue, the leases (`l`), the unlogged ends (`u`), a bound JSON list or the
        // partial index of the runs awaiting approval (it holds those runs only) reads the whole table.
        .filter(
          (detail) =>
            /\bSCAN (?!runs_queue\b|runs_leases\b|l\b|u\b|json_each\b)/.test(detail) &&
            !/\bUSING INDEX runs_runs_awaiting_approval\b/.test(detail),
        )
        .map((detail) => `${detail}: ${sql}`),
    );
    expect(walks).toEqual([]);
    await store.close();
  });

  it("prunes idempotency records past the window from the table", async () => {
    const handle = openSqlite(":memory:");
    const store = createSqliteRunsStore(handle);
    await store.init();
    const old = tick();
    await store.putIdempotency({
      organizationId: org,
      key: "old",
      fingerprint: "f",
      runId: "r1",
      createdAt: old,
      attempt: 0,
      attemptAt: old,
    });
    const later = new Date(old.getTime() + idempotencyWindowMs + 1);
    await store.putIdempotency({
      organizationId: org,
      key: "new",
      fingerprint: "f",
      runId: "r2",
      createdAt: later,
      attempt: 0,
      attemptAt: later,
    });
    expect(
      handle.db
        .prepare("SELECT key FROM runs_idempotency")
        .all()
        .map((row) => row.key),
    ).toEqual(["new"]);
    await store.close();
  });

  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it("holds the claims of runs in flight in memory: a run's claim goes when it finishes, still refused while it runs, none written", async () => {
    const handle = openSqlite(":memory:");
    const store = createSqliteRunsStore(handle);
    await store.init();
    const tables = handle.db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
      .all()
      .map((row) => row.name);
    expect(tables).not.toContain("runs_claims");
    const [finishing, running] = [newRun(), newRun()];
    for (const run of [finishing, running]) {
      await store.insertRun(run);
      expect(await store.claimRun(run.id, "w", tick())).toBe(true);
      await store.transition(
        run.id,
        { from: ["QUEUED"] },
        "STARTING",
        { worker: "w", leaseUntil: new Date(clock + 60_000) },
        tick(),
      );
    }
    await store.transition(
      finishing.id,
      { from: ["STARTING"], worker: "w" },
      "SUCCEEDED",
      { completedAt: tick(), leaseUntil: undefined },
      tick(),
    );
    expect(await store.claimRun(running.id, "other", tick())).toBe(false);
    expect(await store.claimRun(finishing.id, "other", tick())).toBe(true); // forgotten at its end
    // A finished run cannot be started again, claim or not: its guarded move to STARTING fails.
    expect(
      await store.transition(finishing.id, { from: ["QUEUED"] }, "STARTING", { worker: "other" }, tick()),
    ).toBeUndefined();
    await store.close();
  });

  it("keeps runs across a restart on a file: init at every start leaves the tables as they are", async () => {
    const dir = await mkdtemp(join(tmpdir(), "loom-runs-sqlite-"));
    dirs.push(dir);
    const file = join(dir, "loom.db");
    const run = newRun({ output: { value: "kept" } });
    const first = createSqliteRunsStore(openSqlite(file));
    await first.init();
    await first.insertRun(run);
    await first.close();
    const second = createSqliteRunsStore(openSqlite(file));
    await second.init();
    expect(await second.getRun(org, run.id)).toEqual(run);
    expect((await second.queueCandidates([], [], 10)).map((entry) => entry.runId)).toEqual([run.id]);
    await second.close();
  });

  it("holds runs in flight written through: reads are copies, undone writes are forgotten, the row stays the judge", async () => {
    const handle = openSqlite(":memory:");
    const store = createSqliteRunsStore(handle);
    await store.init();
    const run = newRun({ args: ["a"] });
    await store.insertRun(run);
    // A caller's changes to what it was given reach neither the store nor later readers.
    run.args.push("changed by the caller");
    const read = (await store.getRun(org, run.id))!;
    read.args.push("changed by a reader");
    read.status = "FAILED";
    expect(await store.getRun(org, run.id)).toMatchObject({ args: ["a"], status: "QUEUED" });

    // A transition built from the held record is what a read of the row gives.
    const lease = new Date(clock + 60_000);
    const starting = await store.transition(
      run.id,
      { from: ["QUEUED"] },
      "STARTING",
      { worker: "w", leaseUntil: lease, statusDetail: { reason: "why", message: undefined } },
      tick(),
    );
    const fromRow = await createSqliteRunsStore(handle).getRunById(run.id);
    expect(starting).toEqual(fromRow);
    expect(fromRow).toMatchObject({
      status: "STARTING",
      worker: "w",
      leaseUntil: lease,
      statusDetail: { reason: "why" },
    });
    expect(await store.renewLease(run.id, "w", new Date(clock + 120_000))).toBe(true);
    expect(await store.getRunById(run.id)).toEqual(await createSqliteRunsStore(handle).getRunById(run.id));

    // Written in a transaction that is then undone: the held record is forgotten with it.
    expect(() =>
      handle.transaction(() => {
        void store.transition(run.id, { from: ["STARTING"] }, "RUNNING", {}, tick());
        throw new Error("undone");
      }),
    ).toThrow("undone");
    expect((await store.getRunById(run.id))?.status).toBe("STARTING");

    // The guard is the row's: a held record does not let a transition through that the row refuses.
    expect(
      await store.transition(run.id, { from: ["STARTING"], worker: "someone else" }, "RUNNING", {}, tick()),
    ).toBeUndefined();
    const done = await store.transition(
      run.id,
      { from: ["STARTING"] },
      "SUCCEEDED",
      { completedAt: tick(), output: { type: "TextArtifact", value: "x" }, leaseUntil: undefined },
      tick(),
    );
    expect(done).toEqual(await createSqliteRunsStore(handle).getRunById(run.id));
    expect(await store.transition(run.id, { from: ["STARTING"] }, "FAILED", {}, tick())).toBeUndefined();
    await handle.close();
  });
  it("holds the queue and the leases written through: what the tables say, in queue order, undone writes forgotten", async () => {
    const handle = openSqlite(":memory:");
    const store = createSqliteRunsStore(handle);
    await store.init();
    const fromTables = () => createSqliteRunsStore(handle);
    const other = newId();
    // Inserted out of queue order (a create that took longer), and two at the same millisecond: ordered by time, then id.
    const first = newRun();
    const tied = [newRun(), newRun()];
    tied[1]!.createdAt = tied[0]!.createdAt;
    const elsewhere = newRun({ organizationId: other, threadId: newId() });
    await store.queueCandidates([], [], 10); // loaded (empty) before the writes, so they go through
    for (const run of [elsewhere, tied[1]!, first, tied[0]!]) await store.insertRun(run);
    const order = [first, ...[...tied].sort((a, b) => (a.id < b.id ? -1 : 1)), elsewhere].map((run) => run.id);
    expect((await store.queueCandidates([], [], 10)).map((entry) => entry.runId)).toEqual(order);
    expect(await store.queueCandidates([], [], 10)).toEqual(await fromTables().queueCandidates([], [], 10));
    expect((await store.queueCandidates([org], [], 10)).map((entry) => entry.runId)).toEqual([elsewhere.id]);
    expect((await store.queueCandidates([], [elsewhere.threadId!], 2)).map((entry) => entry.runId)).toEqual(
      order.slice(0, 2),
    );
    expect([await store.countQueued(org), await store.countQueued(other)]).toEqual([3, 1]);

    // A claim moves a run from the queue to the leases.
    await store.transition(
      first.id,
      { from: ["QUEUED"] },
      "STARTING",
      { worker: "w", leaseUntil: new Date(clock + 60_000) },
      tick(),
    );
    await store.transition(
      elsewhere.id,
      { from: ["QUEUED"] },
      "STARTING",
      { worker: "w", leaseUntil: new Date(clock + 60_000) },
      tick(),
    );
    expect(await store.countQueued(org)).toBe(2);
    expect(await store.executingLoad()).toEqual({
      perOrganization: new Map([
        [org, 1],
        [other, 1],
      ]),
      threads: new Set([elsewhere.threadId]),
    });
    expect(await store.executingLoad()).toEqual(await fromTables().executingLoad());

    // Undone with the transaction that made them: the queue and the leases are the tables' again.
    expect(() =>
      handle.transaction(() => {
        void store.transition(
          tied[0]!.id,
          { from: ["QUEUED"] },
          "STARTING",
          { worker: "w", leaseUntil: new Date(clock + 60_000) },
          tick(),
        );
        void store.transition(
          first.id,
          { from: ["STARTING"] },
          "SUCCEEDED",
          { completedAt: tick(), leaseUntil: undefined },
          tick(),
        );
        throw new Error("undone");
      }),
    ).toThrow("undone");
    expect(await store.queueCandidates([], [], 10)).toEqual(await fromTables().queueCandidates([], [], 10));
    expect(await store.countQueued(org)).toBe(2);
    expect(await store.executingLoad()).toEqual({
      perOrganization: new Map([
        [org, 1],
        [other, 1],
      ]),
      threads: new Set([elsewhere.threadId]),
    });

    // Finished and dropped: gone from both.
    await store.transition(
      first.id,
      { from: ["STARTING"] },
      "SUCCEEDED",
      { completedAt: tick(), leaseUntil: undefined },
      tick(),
    );
    await store.dropQueueEntry(tied[0]!.id);
    expect((await store.queueCandidates([], [], 10)).map((entry) => entry.runId)).toEqual([tied[1]!.id]);
    expect(await store.executingLoad()).toEqual(await fromTables().executingLoad());
    expect(await store.countQueued(org)).toBe(1);
    await handle.close();
  });
  it("keeps the last 1,000 finished runs: the poll that sees a run's end reads no row; older ones come from the table, unchanged", async () => {
    const handle = openSqlite(":memory:");
    let rowReads = 0;
    const counting: SqliteHandle = {
      ...handle,
      prepare: (sql) => (sql.endsWith("WHERE r.id = ?") && rowReads++, handle.prepare(sql)),
    };
    const store = createSqliteRunsStore(counting);
    await store.init();
    const finish = async (run: RunRecord) => {
      await store.insertRun(run);
      await store.transition(
        run.id,
        { from: ["QUEUED"] },
        "STARTING",
        { worker: "w", leaseUntil: new Date(clock + 60_000) },
        tick(),
      );
      return (await store.transition(
        run.id,
        { from: ["STARTING"] },
        "SUCCEEDED",
        { completedAt: tick(), output: { type: "TextArtifact", value: "x" }, leaseUntil: undefined },
        tick(),
      ))!;
    };
    const oldest = newRun();
    const ended = await finish(oldest);
    expect(await store.getRun(org, oldest.id)).toEqual(ended);
    expect(rowReads).toBe(0);
    for (let i = 0; i < 1_000; i++) await finish(newRun());
    // Pushed out by the thousand after it: read from the table, the same record.
    expect(await store.getRun(org, oldest.id)).toEqual(ended);
    expect(rowReads).toBe(1);
    expect(await createSqliteRunsStore(handle).getRun(org, oldest.id)).toEqual(ended);
    await handle.close();
  });
  it("moves the queue and the leases of a version 4 database into tables without rowid, every row kept, and drops the claims table (version 5)", async () => {
    const handle = openSqlite(":memory:");
    migrate(handle, "runs", runsMigrations.slice(0, 4));
    // The rows as version 4's store wrote them (today's store writes columns version 4 does not have).
    const queued = newRun({ threadId: newId() });
    const executing = newRun({ status: "STARTING", worker: "w" });
    for (const run of [queued, executing])
      handle.db
        .prepare(
          `INSERT INTO runs_runs (id, organization_id, assistant_id, thread_id, args, message, stream, status, knowledge_base_ids,
           retriever_ids, ruleset_ids, structure_ids, tool_ids, created_by, created_at, updated_at, worker)
           VALUES (?, ?, ?, ?, '[]', ?, 0, ?, '[]', '[]', '[]', '[]', '[]', ?, ?, ?, ?)`,
        )
        .run(
          run.id,
          org,
          run.assistantId,
          run.threadId ?? null,
          run.message,
          run.status,
          run.createdBy,
          run.createdAt.getTime(),
          run.updatedAt.getTime(),
          run.worker ?? null,
        );
    handle.db
      .prepare("INSERT INTO runs_queue (run_id, organization_id, thread_id, created_at) VALUES (?, ?, ?, ?)")
      .run(queued.id, org, queued.threadId!, queued.createdAt.getTime());
    handle.db
      .prepare(
        "INSERT INTO runs_leases (run_id, worker, until, organization_id, thread_id) VALUES (?, 'w', ?, ?, NULL)",
      )
      .run(executing.id, clock - 1, org);
    handle.db.prepare("INSERT INTO runs_claims (run_id, worker, at) VALUES (?, 'w', ?)").run(executing.id, clock);
    const tables = () =>
      handle.db
        .prepare(
          "SELECT name, sql FROM sqlite_master WHERE name IN ('runs_queue', 'runs_leases', 'runs_claims') ORDER BY name",
        )
        .all();
    expect(tables().map((t) => /WITHOUT ROWID/.test(String(t.sql)))).toEqual([false, false, false]);
    expect(handle.db.prepare("SELECT count(*) AS n FROM runs_claims").get()!.n).toBe(1);

    const store = createSqliteRunsStore(handle);
    await store.init();
    expect(tables().map((t) => [t.name, /WITHOUT ROWID$/.test(String(t.sql))])).toEqual([
      ["runs_leases", true],
      ["runs_queue", true],
    ]);
    expect(await store.queueCandidates([], [], 10)).toEqual([
      { runId: queued.id, organizationId: org, threadId: queued.threadId, createdAt: queued.createdAt },
    ]);
    expect(await store.executingLoad()).toEqual({ perOrganization: new Map([[org, 1]]), threads: new Set() });
    expect((await store.expiredLeases(tick(), 10)).map((run) => run.id)).toEqual([executing.id]);
    // Claims are this process's own from version 5: the executing run is leased, the queued one claimable.
    expect(await store.claimRun(queued.id, "w", tick())).toBe(true);
    expect(await store.claimRun(queued.id, "other", tick())).toBe(false);
    await handle.close();
  });
});
