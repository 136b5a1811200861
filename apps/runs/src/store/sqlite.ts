import { newestFirstOrder, type SqliteHandle, sqliteLifecycle } from "@loom/store/sqlite";
import { idempotencyWindowMs } from "./idempotency.ts";
import { InFlight } from "./in-flight.ts";
import { runTurn } from "./messages.ts";
import { pausedUnsettled } from "./pending-approval.ts";
import type { RunsStore } from "./port.ts";
import { isTerminal, QueueFull, type RunRecord } from "./run-records.ts";
import { copyOfRun, SqliteRunsCache } from "./sqlite-cache.ts";
import { changeColumns, idArrays, idempotencyOf, queueEntryOf, runOf } from "./sqlite-rows.ts";
import { createSqliteThreads } from "./sqlite-threads.ts";

/**
 * Schema versions of the runs tables (kit `migrate`): append, never edit.
 *
 * `runs_queue` holds only queued runs and `runs_leases` only executing ones
 * (with their organization and thread), so loading them (the store holds
 * both in memory, `InFlight`) costs what is queued or executing, never the
 * history in `runs_runs`. Claims were kept in `runs_claims` until version 5
 * (since version 3 only those of runs in flight); they are held in memory
 * now (see `createSqliteRunsStore`). A run's lease lives
 * in `runs_leases` alone; reads of a run join it. Lists of values (statuses,
 * stale thread holders) are bound as one JSON array and read with
 * `json_each`, so each query is one cached statement; the hot one (a
 * transition's guard) binds its few values instead, as `json_each` costs
 * tens of µs a call.
 */
export const runsMigrations = [
  `CREATE TABLE runs_runs (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, assistant_id TEXT NOT NULL, thread_id TEXT,
     args TEXT NOT NULL, input TEXT, message TEXT NOT NULL, stream INTEGER NOT NULL, status TEXT NOT NULL, status_detail TEXT, output TEXT,
     knowledge_base_ids TEXT NOT NULL, retriever_ids TEXT NOT NULL, ruleset_ids TEXT NOT NULL, structure_ids TEXT NOT NULL, tool_ids TEXT NOT NULL,
     created_by TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, completed_at INTEGER, worker TEXT);
   CREATE INDEX runs_runs_by_assistant ON runs_runs (organization_id, assistant_id, created_at DESC, id DESC, status);
   CREATE INDEX runs_runs_by_thread ON runs_runs (thread_id, status, created_at, id) WHERE thread_id IS NOT NULL;
   CREATE TABLE runs_queue (run_id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, thread_id TEXT, created_at INTEGER NOT NULL);
   CREATE INDEX runs_queue_oldest_first ON runs_queue (created_at, run_id);
   CREATE INDEX runs_queue_by_organization ON runs_queue (organization_id);
   CREATE TABLE runs_leases (run_id TEXT PRIMARY KEY, worker TEXT NOT NULL, until INTEGER NOT NULL, organization_id TEXT NOT NULL, thread_id TEXT);
   CREATE INDEX runs_leases_by_until ON runs_leases (until);
   CREATE TABLE runs_claims (run_id TEXT PRIMARY KEY, worker TEXT NOT NULL, at INTEGER NOT NULL);
   CREATE TABLE runs_threads (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, name TEXT NOT NULL, alias TEXT, created_by TEXT NOT NULL,
     created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, active_run_id TEXT);
   CREATE INDEX runs_threads_by_organization ON runs_threads (organization_id, created_at DESC, id DESC);
   CREATE INDEX runs_threads_by_alias ON runs_threads (organization_id, alias, created_at DESC, id DESC) WHERE alias IS NOT NULL;
   CREATE TABLE runs_idempotency (organization_id TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL, run_id TEXT NOT NULL,
     created_at INTEGER NOT NULL, attempt INTEGER NOT NULL, attempt_at INTEGER NOT NULL, PRIMARY KEY (organization_id, key));
   CREATE INDEX runs_idempotency_by_age ON runs_idempotency (created_at);`,
  // 2: the W3C traceparent of the request that created the run (tracing).
  `ALTER TABLE runs_runs ADD COLUMN traceparent TEXT;`,
  // 3: claims are kept while their run is not finished (the history's claims, keyed by random ids, cost a WAL page per run).
  `DELETE FROM runs_claims WHERE run_id IN (SELECT id FROM runs_runs WHERE status IN ('SUCCEEDED', 'FAILED', 'ERROR', 'CANCELLED'));`,
  // 4: the queue and the leases are read whole (into memory, `InFlight`; the lease sweep is a scan of the runs in flight): their indexes only cost writes.
  `DROP INDEX runs_queue_oldest_first; DROP INDEX runs_queue_by_organization; DROP INDEX runs_leases_by_until;`,
  // 5: the queue and the leases without rowid: each is one B-tree keyed by run id instead of a table and its key's index (a page less for a commit to write, for each). Claims leave the database.
  `CREATE TABLE runs_queue_v5 (run_id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, thread_id TEXT, created_at INTEGER NOT NULL) WITHOUT ROWID;
   INSERT INTO runs_queue_v5 SELECT run_id, organization_id, thread_id, created_at FROM runs_queue;
   DROP TABLE runs_queue; ALTER TABLE runs_queue_v5 RENAME TO runs_queue;
   CREATE TABLE runs_leases_v5 (run_id TEXT PRIMARY KEY, worker TEXT NOT NULL, until INTEGER NOT NULL, organization_id TEXT NOT NULL, thread_id TEXT) WITHOUT ROWID;
   INSERT INTO runs_leases_v5 SELECT run_id, worker, until, organization_id, thread_id FROM runs_leases;
   DROP TABLE runs_leases; ALTER TABLE runs_leases_v5 RENAME TO runs_leases;
   DROP TABLE runs_claims;`,
  // 6: ended runs whose terminal event is still to be written (the sweep writes it; docs/decisions.md, "Runs").
  `CREATE TABLE runs_unlogged_ends (run_id TEXT PRIMARY KEY, at INTEGER NOT NULL) WITHOUT ROWID;`,
  // 7: threads' metadata, message counts and next index; their messages (docs/behaviour.md §5).
  `ALTER TABLE runs_threads ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
   ALTER TABLE runs_threads ADD COLUMN message_count INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE runs_threads ADD COLUMN messages_length INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE runs_threads ADD COLUMN next_index INTEGER NOT NULL DEFAULT 0;
   CREATE INDEX runs_threads_by_creator ON runs_threads (organization_id, created_by, created_at DESC, id DESC);
   CREATE TABLE runs_messages (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, thread_id TEXT NOT NULL, idx INTEGER NOT NULL,
     input TEXT NOT NULL, output TEXT NOT NULL, metadata TEXT NOT NULL, created_by TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
   CREATE INDEX runs_messages_by_thread ON runs_messages (thread_id, idx, id);`,
  // 8: the run's rules as read at its creation (docs/behaviour.md §5); NULL on the runs before, which had none.
  `ALTER TABLE runs_runs ADD COLUMN instructions TEXT; ALTER TABLE runs_runs ADD COLUMN output_schema TEXT;`,
  // 9: a run paused for approval of its tool calls, and its deadline for the sweep (docs/decisions.md, "Approval of tool calls").
  `ALTER TABLE runs_runs ADD COLUMN pending TEXT;
   CREATE INDEX runs_runs_awaiting_approval ON runs_runs (json_extract(pending, '$.deadline')) WHERE pending IS NOT NULL;`,
  // 10: paused runs whose last move left business (events to write, a re-queue) for the sweep after a crash (docs/decisions.md, "Approval of tool calls").
  `CREATE TABLE runs_unsettled_approvals (run_id TEXT PRIMARY KEY, at INTEGER NOT NULL) WITHOUT ROWID;`,
];

/** A run with its lease: every read of runs selects this. */
const runWithLease = "SELECT r.*, l.until AS lease_until FROM runs_runs r LEFT JOIN runs_leases l ON l.run_id = r.id";
const executing = "('STARTING', 'RUNNING')";

/**
 * SQLite adapter (the embedded store). A state change is one guarded UPDATE
 * in a transaction with the queue and lease rows it moves, so a run is never
 * QUEUED without its queue entry nor executing without its lease on disk.
 * A failed WAL sync fails the store for good.
 *
 * Runs not finished, the queue and the leases are also held in memory,
 * written through (`SqliteRunsCache`): every write here updates the cache in
 * the same turn, and undone writes (`afterRollback`) empty it.
 *
 * Claims are held in memory only: one process claims, so a claim needs no
 * row to be granted once (the port's unique insert is for processes sharing
 * MongoDB), and a restart that forgets them loses nothing (a claimed run
 * that had not started is still queued; one that had is leased). Undone
 * writes forget them all: a claim whose run's move to STARTING was undone
 * must be given again, and one given twice is harmless, as the move is
 * guarded.
 */
export function createSqliteRunsStore(handle: SqliteHandle): RunsStore {
  const { prepare } = handle;
  const cache = new SqliteRunsCache(
    () =>
      new InFlight(
        prepare("SELECT * FROM runs_queue ORDER BY created_at, run_id").all().map(queueEntryOf),
        prepare("SELECT run_id, organization_id, thread_id FROM runs_leases")
          .all()
          .map((row) => ({
            runId: row.run_id as string,
            organizationId: row.organization_id as string,
            ...(row.thread_id === null ? {} : { threadId: row.thread_id as string }),
          })),
      ),
  );
  /** Runs claimed and not finished (nor their claim given back), and when each claim was granted. */
  const claims = new Map<string, number>();
  // Undone writes may have reached a held record: forget them all (they are read again when needed).
  handle.afterRollback(() => {
    cache.forget();
    claims.clear();
  });
  const runById = (id: string) => cache.run(id, (id) => runOf(prepare(`${runWithLease} WHERE r.id = ?`).get(id)));
  const { appendInTransaction, ...threads } = createSqliteThreads(handle);

  return {
    sharedByProcesses: false,
    durable: () => handle.durable(),
    ...sqliteLifecycle(handle, "runs", runsMigrations),

    async insertRun(run, maxQueued) {
      const full =
        maxQueued !== undefined &&
        run.status === "QUEUED" &&
        cache.queueAndLeases().countQueued(run.organizationId) >= maxQueued;
      // One process writes this store and the check and the insert share a turn: no create slips in between.
      if (full) {
        if (runById(run.id)) return false; // stored already (a keyed create taken over): not a new queued run
        throw new QueueFull(maxQueued);
      }
      return handle.transaction(() => {
        const inserted =
          prepare(
            `INSERT INTO runs_runs (id, organization_id, assistant_id, thread_id, args, input, message, stream, status, status_detail, output,
             knowledge_base_ids, retriever_ids, ruleset_ids, structure_ids, tool_ids, created_by, created_at, updated_at, completed_at, worker, traceparent,
             instructions, output_schema)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
          ).run(
            run.id,
            run.organizationId,
            run.assistantId,
            run.threadId ?? null,
            JSON.stringify(run.args),
            run.input ?? null,
            run.message,
            run.stream ? 1 : 0,
            run.status,
            run.statusDetail === undefined ? null : JSON.stringify(run.statusDetail),
            run.output === undefined ? null : JSON.stringify(run.output),
            ...idArrays.map(([field]) => JSON.stringify(run[field])),
            run.createdBy,
            run.createdAt.getTime(),
            run.updatedAt.getTime(),
            run.completedAt?.getTime() ?? null,
            run.worker ?? null,
            run.traceparent ?? null,
            run.instructions ?? null,
            run.outputSchema === undefined ? null : JSON.stringify(run.outputSchema),
          ).changes === 1;
        if (!inserted) return false;
        cache.hold(copyOfRun(run));
        if (run.status === "QUEUED") {
          const queued =
            prepare(
              "INSERT INTO runs_queue (run_id, organization_id, thread_id, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            ).run(run.id, run.organizationId, run.threadId ?? null, run.createdAt.getTime()).changes === 1;
          if (queued)
            cache.loadedQueueAndLeases()?.enqueue({
              runId: run.id,
              organizationId: run.organizationId,
              ...(run.threadId === undefined ? {} : { threadId: run.threadId }),
              createdAt: run.createdAt,
            });
        }
        if (run.leaseUntil) {
          const leased =
            prepare(
              "INSERT INTO runs_leases (run_id, worker, until, organization_id, thread_id) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            ).run(run.id, run.worker ?? "", run.leaseUntil.getTime(), run.organizationId, run.threadId ?? null)
              .changes === 1;
          if (leased) cache.loadedQueueAndLeases()?.lease(run.id, run.organizationId, run.threadId);
        }
        return true;
      });
    },
    async getRun(organizationId, id) {
      const run = runById(id);
      return run?.organizationId === organizationId ? run : undefined;
    },
    getRunById: async (id) => runById(id),
    async listRuns(organizationId, assistantId, statuses, skip, limit) {
      const where = statuses.length
        ? "r.organization_id = ? AND r.assistant_id = ? AND r.status IN (SELECT value FROM json_each(?))"
        : "r.organization_id = ? AND r.assistant_id = ?";
      const params = statuses.length
        ? [organizationId, assistantId, JSON.stringify(statuses)]
        : [organizationId, assistantId];
      const totalCount = Number(prepare(`SELECT count(*) AS n FROM runs_runs r WHERE ${where}`).get(...params)!.n);
      const rows = prepare(`${runWithLease} WHERE ${where} ORDER BY ${newestFirstOrder} LIMIT ? OFFSET ?`).all(
        ...params,
        limit,
        skip,
      );
      return { items: rows.map((row) => runOf(row)!), totalCount };
    },
    async transition(id, guard, to, changes, at) {
      const { leaseUntil, threadMessage, ...rest } = changes;
      const fields = (Object.keys(rest) as (keyof typeof changeColumns)[]).filter((field) => field in changeColumns);
      const set = ["status = ?", "updated_at = ?", ...fields.map((field) => `${changeColumns[field][0]} = ?`)].join(
        ", ",
      );
      const values = fields.map((field) => {
        const value = rest[field];
        // As on MongoDB: a change to undefined removes the field.
        return value === undefined ? null : (changeColumns[field][1] as (v: unknown) => string | number)(value);
      });
      let where = `id = ? AND status IN (${guard.from.map(() => "?").join(", ")})`;
      const params: (string | number)[] = [id, ...guard.from];
      if (guard.worker !== undefined) {
        where += " AND worker = ?";
        params.push(guard.worker);
      }
      if (guard.unheld) where += " AND worker IS NULL";
      if (guard.pending) {
        where += " AND pending = ?";
        params.push(JSON.stringify(guard.pending));
      }
      if (guard.leaseExpiredBefore) {
        where += " AND EXISTS (SELECT 1 FROM runs_leases WHERE run_id = ? AND until < ?)";
        params.push(id, guard.leaseExpiredBefore.getTime());
      }
      return handle.transaction(() => {
        const kept = cache.unfinishedRun(id);
        let next: RunRecord;
        if (kept) {
          // Held: the row is the record, so the record after the change is built, not read back.
          if (
            prepare(`UPDATE runs_runs SET ${set} WHERE ${where}`).run(to, at.getTime(), ...values, ...params)
              .changes !== 1
          )
            return undefined;
          next = { ...kept, status: to, updatedAt: at };
          fields.forEach((field, i) => {
            const stored = values[i];
            if (stored === null) delete next[field];
            else Object.assign(next, { [field]: (changeColumns[field][2] as (v: unknown) => unknown)(stored) });
          });
          if ("leaseUntil" in changes) {
            if (leaseUntil === undefined) delete next.leaseUntil;
            else next.leaseUntil = leaseUntil;
          }
        } else {
          const row = prepare(`UPDATE runs_runs SET ${set} WHERE ${where} RETURNING *`).get(
            to,
            at.getTime(),
            ...values,
            ...params,
          );
          if (!row) return undefined;
          // The row of RETURNING has no lease (it lives in runs_leases): the changed one, or the one standing.
          const lease =
            "leaseUntil" in changes
              ? (leaseUntil?.getTime() ?? null)
              : (prepare("SELECT until FROM runs_leases WHERE run_id = ?").get(id)?.until ?? null);
          next = runOf({ ...row, lease_until: lease })!;
        }
        // Held, the queue says whether there is a row to delete: a run leaves the queue once, at its first move.
        const inFlight = cache.loadedQueueAndLeases();
        if (to !== "QUEUED" && (!inFlight || inFlight.isQueued(id))) {
          prepare("DELETE FROM runs_queue WHERE run_id = ?").run(id);
          inFlight?.dequeue(id);
        }
        if (to === "SUCCEEDED" && threadMessage && next.threadId)
          appendInTransaction(runTurn({ ...next, threadId: next.threadId }, threadMessage, at));
        if (isTerminal(to)) {
          claims.delete(id);
          prepare("INSERT INTO runs_unlogged_ends (run_id, at) VALUES (?, ?) ON CONFLICT DO NOTHING").run(
            id,
            at.getTime(),
          );
        }
        // A paused run's business left by this move is marked with it; a move that settles, takes up or ends one unmarks it.
        if (pausedUnsettled(next))
          prepare(
            "INSERT INTO runs_unsettled_approvals (run_id, at) VALUES (?, ?) ON CONFLICT (run_id) DO UPDATE SET at = excluded.at",
          ).run(id, at.getTime());
        else if ("pending" in changes || guard.unheld)
          prepare("DELETE FROM runs_unsettled_approvals WHERE run_id = ?").run(id);
        if ("leaseUntil" in changes) {
          if (leaseUntil === undefined) {
            prepare("DELETE FROM runs_leases WHERE run_id = ?").run(id);
            inFlight?.unlease(id);
          } else {
            prepare(
              `INSERT INTO runs_leases (run_id, worker, until, organization_id, thread_id) VALUES (?, ?, ?, ?, ?)
               ON CONFLICT (run_id) DO UPDATE SET worker = excluded.worker, until = excluded.until`,
            ).run(id, next.worker ?? "", leaseUntil.getTime(), next.organizationId, next.threadId ?? null);
            inFlight?.lease(id, next.organizationId, next.threadId);
          }
        }
        cache.hold(next);
        return copyOfRun(next);
      });
    },
    async claimRun(id, _worker, at, staleBefore) {
      const standing = claims.get(id);
      if (standing !== undefined && !(staleBefore && standing < staleBefore.getTime())) return false;
      claims.set(id, at.getTime());
      return true;
    },
    async renewLease(id, worker, leaseUntil) {
      // Still ours: the run is executing and held by this worker, and so is its lease.
      const renewed =
        prepare(
          `UPDATE runs_leases SET until = ? WHERE run_id = ? AND worker = ?
             AND EXISTS (SELECT 1 FROM runs_runs WHERE id = ? AND worker = ? AND status IN ${executing})`,
        ).run(leaseUntil.getTime(), id, worker, id, worker).changes === 1;
      if (renewed) cache.leaseRenewed(id, leaseUntil);
      return renewed;
    },
    queueCandidates: async (skipOrganizations, skipThreads, limit) =>
      cache.queueAndLeases().candidates(skipOrganizations, skipThreads, limit),
    async dropQueueEntry(runId) {
      prepare("DELETE FROM runs_queue WHERE run_id = ?").run(runId);
      cache.loadedQueueAndLeases()?.dequeue(runId);
      claims.delete(runId); // off the queue, nothing can claim it: its claim would only stay in memory
    },
    async releaseClaim(runId) {
      claims.delete(runId);
    },
    async requeuePaused(run, at) {
      claims.delete(run.id);
      const queued =
        prepare(
          "INSERT INTO runs_queue (run_id, organization_id, thread_id, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
        ).run(run.id, run.organizationId, null, at.getTime()).changes === 1;
      // Without its thread: the run holds it already, and the thread's other runs must not hide this entry.
      if (queued)
        cache.loadedQueueAndLeases()?.enqueue({ runId: run.id, organizationId: run.organizationId, createdAt: at });
      if (!run.pending?.unlogged?.length)
        prepare("DELETE FROM runs_unsettled_approvals WHERE run_id = ? AND at <= ?").run(run.id, at.getTime());
    },
    countQueued: async (organizationId) => cache.queueAndLeases().countQueued(organizationId),
    async executingLoad() {
      const load = cache.queueAndLeases().executingLoad();
      // A paused run holds its thread without a lease: the thread's queued runs wait, and take no candidate's place.
      for (const row of prepare(
        `SELECT thread_id FROM runs_runs INDEXED BY runs_runs_awaiting_approval
         WHERE pending IS NOT NULL AND status = 'RUNNING' AND worker IS NULL AND thread_id IS NOT NULL`,
      ).all())
        load.threads.add(row.thread_id as string);
      return load;
    },
    async expiredLeases(now, limit) {
      // CROSS JOIN keeps the leases (the runs in flight) the outer loop: the planner, without statistics, would rather walk every run.
      const rows = prepare(
        `SELECT r.*, l.until AS lease_until FROM runs_leases l CROSS JOIN runs_runs r ON r.id = l.run_id
         WHERE l.until < ? AND r.status IN ${executing} ORDER BY l.until LIMIT ?`,
      ).all(now.getTime(), limit);
      return rows.map((row) => runOf(row)!);
    },
    async endLogged(id) {
      prepare("DELETE FROM runs_unlogged_ends WHERE run_id = ?").run(id);
    },
    unloggedEnds: async (before, limit) =>
      // CROSS JOIN keeps the marks (a few at most) the outer loop, as for the leases.
      prepare(
        `SELECT r.*, NULL AS lease_until FROM runs_unlogged_ends u CROSS JOIN runs_runs r ON r.id = u.run_id
         WHERE u.at < ? ORDER BY u.at LIMIT ?`,
      )
        .all(before.getTime(), limit)
        .map((row) => runOf(row)!),
    expiredApprovals: async (now, limit) =>
      prepare(
        `SELECT r.*, NULL AS lease_until FROM runs_runs r INDEXED BY runs_runs_awaiting_approval
         WHERE r.pending IS NOT NULL AND json_extract(r.pending, '$.deadline') < ?
         AND r.status = 'RUNNING' AND r.worker IS NULL LIMIT ?`,
      )
        .all(now.getTime(), limit)
        .map((row) => runOf(row)!),
    async unsettledApprovals(before, limit) {
      // CROSS JOIN keeps the marks (a few at most) the outer loop, as for the unlogged ends.
      const marked = prepare(
        `SELECT r.*, NULL AS lease_until FROM runs_unsettled_approvals u CROSS JOIN runs_runs r ON r.id = u.run_id
         WHERE u.at < ? ORDER BY u.at LIMIT ?`,
      )
        .all(before.getTime(), limit)
        .map((row) => runOf(row)!);
      // Marked with its move, a run is always as its mark says; checked all the same, as on MongoDB.
      return marked.filter(pausedUnsettled);
    },
    // A run's turn is appended with its move: none is ever marked to complete.
    appendRunMessage: async () => {},
    ...threads,

    async putIdempotency(record) {
      return handle.transaction(() => {
        // Records past the window go first (a range of the age index, empty most of the time): the table holds one window of keys.
        prepare("DELETE FROM runs_idempotency WHERE created_at < ?").run(
          record.createdAt.getTime() - idempotencyWindowMs,
        );
        return (
          prepare(
            "INSERT INTO runs_idempotency (organization_id, key, fingerprint, run_id, created_at, attempt, attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
          ).run(
            record.organizationId,
            record.key,
            record.fingerprint,
            record.runId,
            record.createdAt.getTime(),
            record.attempt,
            record.attemptAt.getTime(),
          ).changes === 1
        );
      });
    },
    async getIdempotency(organizationId, key, createdAfter) {
      const record = idempotencyOf(
        prepare("SELECT * FROM runs_idempotency WHERE organization_id = ? AND key = ?").get(organizationId, key),
      );
      return record && record.createdAt >= createdAfter ? record : undefined;
    },
    async deleteIdempotency(organizationId, key, runId) {
      prepare("DELETE FROM runs_idempotency WHERE organization_id = ? AND key = ? AND run_id = ?").run(
        organizationId,
        key,
        runId,
      );
    },
    async takeOverIdempotency(organizationId, key, attempt, at) {
      // One guarded UPDATE: SQLite serializes writers, so only one caller moves the record to `attempt`.
      return (
        prepare(
          "UPDATE runs_idempotency SET attempt = ?, attempt_at = ? WHERE organization_id = ? AND key = ? AND attempt < ?",
        ).run(attempt, at.getTime(), organizationId, key, attempt).changes === 1
      );
    },
  };
}
