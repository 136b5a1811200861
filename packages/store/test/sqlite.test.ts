import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { heldSyncs } from "@loom/testing/held-syncs";
import { describe, expect, it, vi } from "vitest";
import { type Acknowledgements, DatabaseInUseError, groupCommitted, migrate, openSqlite } from "../src/sqlite.ts";

const freshFile = () => join(mkdtempSync(join(tmpdir(), "loom-sqlite-")), "test.db");

/** A tiny store over one table, as the services' adapters are written. */
function notesStore(
  file: string,
  acknowledge: Acknowledgements<{ add: unknown; addPair: unknown; count: unknown }> = "each call",
) {
  const handle = openSqlite(file);
  migrate(handle, "notes", ["CREATE TABLE notes (id TEXT PRIMARY KEY, text TEXT NOT NULL)"]);
  const store = groupCommitted(
    handle,
    {
      add: async (id: string, text: string) =>
        void handle.prepare("INSERT INTO notes (id, text) VALUES (?, ?)").run(id, text),
      addPair: async (a: string, b: string) =>
        handle.transaction(() => {
          handle.prepare("INSERT INTO notes (id, text) VALUES (?, 'pair')").run(a);
          handle.prepare("INSERT INTO notes (id, text) VALUES (?, 'pair')").run(b);
        }),
      count: async () => Number(handle.prepare("SELECT count(*) AS n FROM notes").get()!.n),
    },
    acknowledge,
  );
  return { handle, store };
}

/** What another connection sees: only what is committed. */
const committedIds = (file: string) => {
  const reader = new DatabaseSync(file, { readOnly: true });
  try {
    return reader
      .prepare("SELECT id FROM notes ORDER BY id")
      .all()
      .map((r) => r.id);
  } finally {
    reader.close();
  }
};

/**
 * A notes store on a fresh file, its WAL open and its first write on disk,
 * then `test` with every WAL sync held (`heldSyncs`); restored and closed after.
 */
async function withHeldSyncs(
  acknowledge: Parameters<typeof notesStore>[1],
  test: (
    held: ReturnType<typeof notesStore> & { file: string } & Awaited<ReturnType<typeof heldSyncs>>,
  ) => Promise<void>,
) {
  const file = freshFile();
  const { handle, store } = notesStore(file, acknowledge);
  await store.add("warm", "opens the WAL file");
  await handle.durable();
  const held = await heldSyncs(file);
  const { synced } = held;
  try {
    await test({ file, handle, store, ...held });
  } finally {
    synced.mockRestore();
    await handle.close();
  }
}

describe("the embedded store's SQLite handle", () => {
  it("acknowledges a write only once it is committed, and commits the calls of one turn together", async () => {
    const file = freshFile();
    const { handle, store } = notesStore(file);
    const writes = [store.add("a", "1"), store.add("b", "2"), store.add("c", "3")];
    // Written, in one open transaction, none of it committed yet.
    expect(handle.db.isTransaction).toBe(true);
    expect(committedIds(file)).toEqual([]);
    await Promise.all(writes);
    expect(handle.db.isTransaction).toBe(false);
    expect(committedIds(file)).toEqual(["a", "b", "c"]);
    await handle.close();
  });

  it("acknowledges a write only once an fdatasync of the WAL covers it, one sync for the calls of a turn", () =>
    withHeldSyncs("each call", async ({ file, store, synced, release }) => {
      let acknowledged = 0;
      const writes = [store.add("a", "1"), store.add("b", "2")].map((w) => w.then(() => acknowledged++));
      await vi.waitFor(() => expect(synced).toHaveBeenCalledTimes(1));
      // Committed (another connection sees it) but not yet on disk: not acknowledged.
      expect(committedIds(file)).toEqual(["a", "b", "warm"]);
      expect(acknowledged).toBe(0);
      // A write while that sync runs waits for the next one, which starts only after it.
      const late = store.add("c", "3").then(() => acknowledged++);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(synced).toHaveBeenCalledTimes(1);
      release();
      await Promise.all(writes);
      expect(acknowledged).toBe(2);
      await vi.waitFor(() => expect(synced).toHaveBeenCalledTimes(2));
      release();
      await late;
      expect(acknowledged).toBe(3);
    }));

  it("keeps the group open while the previous group's sync runs, and commits what was written meanwhile at once when it ends", () =>
    withHeldSyncs("each call", async ({ file, store, synced, release }) => {
      const first = store.add("a", "1");
      await vi.waitFor(() => expect(synced).toHaveBeenCalledTimes(1));
      // Two more turns while that sync is held: one open group gathers both, committed by none of them.
      const second = store.add("b", "2");
      await new Promise((r) => setImmediate(r));
      const third = store.add("c", "3");
      await new Promise((r) => setTimeout(r, 20));
      expect(committedIds(file)).toEqual(["a", "warm"]);
      release();
      await first;
      await vi.waitFor(() => expect(synced).toHaveBeenCalledTimes(2)); // one commit and one sync for both
      expect(committedIds(file)).toEqual(["a", "b", "c", "warm"]);
      release();
      await Promise.all([second, third]);
      expect(synced).toHaveBeenCalledTimes(2);
    }));

  it("with acknowledgement by durable(), answers calls at once and durable() once their group is committed and synced", () =>
    withHeldSyncs("by durable()", async ({ file, handle, store, synced, release }) => {
      await store.add("a", "");
      // Answered, and visible to this process's later calls, but neither committed nor on disk yet.
      expect(await store.count()).toBe(2);
      expect(committedIds(file)).toEqual(["warm"]);
      let durable = false;
      const done = handle.durable().then(() => (durable = true));
      await vi.waitFor(() => expect(synced).toHaveBeenCalledTimes(1));
      expect(committedIds(file)).toEqual(["a", "warm"]);
      expect(durable).toBe(false);
      release();
      await done;
      expect(durable).toBe(true);
    }));

  it("syncs nothing for a group that only reads, which still answers only once the groups before it are on disk", () =>
    withHeldSyncs("each call", async ({ store, synced, release }) => {
      let added = false;
      const add = store.add("a", "1").then(() => (added = true));
      await vi.waitFor(() => expect(synced).toHaveBeenCalledTimes(1)); // its group committed, its sync held
      let counted: number | undefined;
      const count = store.count().then((n) => (counted = n)); // a later group, reading what the held one wrote
      await new Promise((r) => setTimeout(r, 20));
      expect([added, counted]).toEqual([false, undefined]);
      release();
      await Promise.all([add, count]);
      expect(counted).toBe(2);
      expect(synced).toHaveBeenCalledTimes(1); // none for the read
      expect(await store.count()).toBe(2);
      expect(synced).toHaveBeenCalledTimes(1);
    }));

  it("begins a group's transaction at its first write: a group that only reads never holds the write lock", async () => {
    const file = freshFile();
    const { handle, store } = notesStore(file);
    const inTransaction: boolean[] = [];
    const seen = groupCommitted(handle, { look: async () => void inTransaction.push(handle.db.isTransaction) });
    await Promise.all([store.count(), seen.look()]); // one group, reads only
    await Promise.all([store.count(), store.add("a", ""), seen.look()]); // one group, a read, a write, a read
    expect(inTransaction).toEqual([false, true]);
    expect(handle.db.isTransaction).toBe(false); // committed
    expect(committedIds(file)).toEqual(["a"]);
    await handle.close();
  });

  it("durable() in a group that has written nothing yet waits only for the groups before it", () =>
    withHeldSyncs("by durable()", async ({ handle, store, synced, release }) => {
      expect(await store.count()).toBe(1); // opens this turn's group, writes nothing
      let durable = false;
      void handle.durable().then(() => (durable = true));
      await new Promise<void>((resolve) => queueMicrotask(resolve)); // before the group's commit, which waits for the turn to end
      await new Promise<void>((resolve) => queueMicrotask(resolve));
      expect(durable).toBe(true);
      await store.add("a", ""); // now the open group holds a write
      let written = false;
      const done = handle.durable().then(() => (written = true));
      await vi.waitFor(() => expect(synced).toHaveBeenCalledTimes(1));
      expect(written).toBe(false);
      release();
      await done;
    }));

  it("checkpoints the WAL on a thread of its own: none inside a commit, and a checkpoint lets the WAL start over", async () => {
    const file = freshFile();
    const { handle, store } = notesStore(file);
    try {
      expect(handle.db.prepare("PRAGMA wal_autocheckpoint").get()).toEqual({ wal_autocheckpoint: 0 });
      const text = "x".repeat(2_000);
      for (let group = 0; group < 40; group++)
        await Promise.all(Array.from({ length: 50 }, (_, i) => store.add(`${group}-${i}`, text)));
      const done = await handle.checkpoint(); // the thread may have checkpointed some already: its timer runs meanwhile
      expect(done.checkpointed).toBe(done.log);
      await store.add("after", "the WAL starts over");
      expect((await handle.checkpoint()).log).toBeLessThan(10);
      expect(await store.count()).toBe(2_001);
    } finally {
      await handle.close();
    }
    const reopened = openSqlite(file);
    expect(Number(reopened.db.prepare("SELECT count(*) AS n FROM notes").get()!.n)).toBe(2_001);
    await reopened.close();
  });

  it("acknowledges each method as told: a method named 'by durable()' answers at once, the others once on disk", () =>
    withHeldSyncs({ add: "by durable()" }, async ({ store, synced, release }) => {
      await store.add("a", ""); // answered while its sync is held
      let counted: number | undefined;
      const count = store.count().then((n) => (counted = n));
      await vi.waitFor(() => expect(synced).toHaveBeenCalledTimes(1));
      await new Promise((r) => setTimeout(r, 20));
      expect(counted).toBeUndefined(); // a read waits for the disk
      release();
      await count;
      expect(counted).toBe(2);
    }));

  it("undoes a failed call's writes and keeps the others of its group", async () => {
    const file = freshFile();
    const { handle, store } = notesStore(file);
    await store.add("x", "first");
    const results = await Promise.allSettled([store.add("y", "ok"), store.addPair("z", "x"), store.add("w", "ok")]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    // "z" was written before the pair failed on "x": it is gone with the pair.
    expect(committedIds(file)).toEqual(["w", "x", "y"]);
    expect(await store.count()).toBe(3);
    await handle.close();
  });

  it("applies each migration once, in order, and refuses a database newer than the code", async () => {
    const file = freshFile();
    const handle = openSqlite(file);
    const v1 = ["CREATE TABLE t (a INTEGER)"];
    const v2 = [...v1, "ALTER TABLE t ADD COLUMN b TEXT"];
    migrate(handle, "t", v1);
    migrate(handle, "t", v2);
    migrate(handle, "t", v2);
    expect(
      handle.db
        .prepare("SELECT version FROM schema_migrations WHERE scope = 't' ORDER BY version")
        .all()
        .map((r) => r.version),
    ).toEqual([1, 2]);
    expect(
      handle.db
        .prepare("SELECT name FROM pragma_table_info('t')")
        .all()
        .map((r) => r.name),
    ).toEqual(["a", "b"]);
    expect(() => migrate(handle, "t", v1)).toThrow(/schema version 2, newer than this Loom knows \(1\)/);
    await handle.close();
  });

  it("holds an exclusive database against a second opener until it closes", async () => {
    const file = freshFile();
    const first = openSqlite(file, { exclusive: true });
    expect(() => openSqlite(file, { exclusive: true })).toThrow(DatabaseInUseError);
    await first.close();
    const second = openSqlite(file, { exclusive: true });
    await second.close();
  });
});
