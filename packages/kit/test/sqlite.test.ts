import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { DatabaseInUseError, groupCommitted, migrate, openSqlite } from "../src/sqlite.ts";

const freshFile = () => join(mkdtempSync(join(tmpdir(), "loom-sqlite-")), "test.db");

/** A tiny store over one table, as the services' adapters are written. */
function notesStore(file: string) {
  const handle = openSqlite(file);
  migrate(handle, "notes", ["CREATE TABLE notes (id TEXT PRIMARY KEY, text TEXT NOT NULL)"]);
  const store = groupCommitted(handle, {
    add: async (id: string, text: string) => void handle.prepare("INSERT INTO notes (id, text) VALUES (?, ?)").run(id, text),
    addPair: async (a: string, b: string) =>
      handle.transaction(() => {
        handle.prepare("INSERT INTO notes (id, text) VALUES (?, 'pair')").run(a);
        handle.prepare("INSERT INTO notes (id, text) VALUES (?, 'pair')").run(b);
      }),
    count: async () => Number(handle.prepare("SELECT count(*) AS n FROM notes").get()!.n),
  });
  return { handle, store };
}

/** What another connection sees: only what is committed. */
const committedIds = (file: string) => {
  const reader = new DatabaseSync(file, { readOnly: true });
  try {
    return reader.prepare("SELECT id FROM notes ORDER BY id").all().map((r) => r.id);
  } finally {
    reader.close();
  }
};

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
    expect(handle.db.prepare("SELECT version FROM schema_migrations WHERE scope = 't' ORDER BY version").all().map((r) => r.version)).toEqual([1, 2]);
    expect(handle.db.prepare("SELECT name FROM pragma_table_info('t')").all().map((r) => r.name)).toEqual(["a", "b"]);
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
