import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { isDependencyDown } from "@loom/runtime/dependency-down";
import { heldSyncs } from "@loom/testing/held-syncs";
import { type SmallDisk, smallDisk } from "@loom/testing/small-disk";
import { afterEach, describe, expect, it, vi } from "vitest";
import { heldRows } from "../src/held-rows.ts";
import { type Acknowledgement, groupCommitted, migrate, openSqlite } from "../src/sqlite.ts";

/**
 * The embedded store fails closed (docs/decisions.md, "The embedded store"):
 * after a failed WAL sync, or a transaction SQLite undid on its own, nothing
 * more is acknowledged, nothing undone is served from memory, and nothing is
 * written, until the process restarts and SQLite recovers from its log.
 */

const freshFile = () => join(mkdtempSync(join(tmpdir(), "loom-sqlite-")), "test.db");

/** A store over one table that holds its rows in memory, as the services' adapters do (kit `heldRows`). */
function notesStore(file: string, acknowledge: Acknowledgement) {
  const handle = openSqlite(file);
  migrate(handle, "notes", ["CREATE TABLE notes (id TEXT PRIMARY KEY, text TEXT NOT NULL)"]);
  const held = heldRows<string>(handle, 100);
  const store = groupCommitted(
    handle,
    {
      add: async (id: string, text: string) => {
        handle.prepare("INSERT INTO notes (id, text) VALUES (?, ?)").run(id, text);
        held.hold(id, text);
      },
      set: async (id: string, text: string) => {
        handle.prepare("UPDATE notes SET text = ? WHERE id = ?").run(text, id);
        held.hold(id, text);
      },
      /** One large row in a transaction of its own (a savepoint in the group's). */
      addLarge: async (id: string, bytes: number) =>
        void handle.transaction(() =>
          handle.prepare("INSERT INTO notes (id, text) VALUES (?, ?)").run(id, "x".repeat(bytes)),
        ),
      text: async (id: string) =>
        held.get(id) ?? (handle.prepare("SELECT text FROM notes WHERE id = ?").get(id)?.text as string | undefined),
    },
    acknowledge,
  );
  return { handle, store };
}

/** What is in the file, read by another connection (only what is committed), or after a restart. */
const onDisk = (file: string) => {
  const reader = new DatabaseSync(file);
  try {
    return Object.fromEntries(
      reader
        .prepare("SELECT id, text FROM notes ORDER BY id")
        .all()
        .map((r) => [r.id, r.text]),
    );
  } finally {
    reader.close();
  }
};

const failedClosed = (reason: unknown) => isDependencyDown(reason) && (reason as Error).name === "DatabaseFailed";

describe("the embedded store after a failed WAL sync", () => {
  // fdatasync cannot be made to fail for real here (tmpfs and the test machine's disk do not fail it):
  // the sync is the real walSync with the file handle's datasync replaced (@loom/testing/held-syncs).
  it.each(["EIO", "ENOSPC"] as const)(
    "acknowledges nothing after a sync failed with %s: not the group committed behind it, nor any later call",
    async (code) => {
      const file = freshFile();
      const { handle, store } = notesStore(file, "each call");
      await store.add("warm", "opens the WAL file");
      const failures: unknown[] = [];
      handle.afterFailure((error) => failures.push(error));
      const { synced, fail } = await heldSyncs(file);
      try {
        const a = store.add("a", "in the group whose sync fails");
        await vi.waitFor(() => expect(synced).toHaveBeenCalledTimes(1));
        // Written while that sync runs: its group commits when the sync ends.
        const b = store.add("b", "queued behind the failed sync");
        const settled = Promise.allSettled([a, b]);
        fail(code);
        // Linux reports a writeback error once: the next fdatasync succeeds, although the pages it lost are gone.
        synced.mockRestore();
        const [first, second] = await settled;
        expect(first.status).toBe("rejected");
        expect(second.status).toBe("rejected");
        expect(failedClosed((second as PromiseRejectedResult).reason)).toBe(true);
        expect(onDisk(file)).not.toHaveProperty("b");
        await expect(store.add("c", "after the failure")).rejects.toSatisfy(failedClosed);
        await expect(store.text("warm")).rejects.toSatisfy(failedClosed);
        await expect(handle.durable()).rejects.toSatisfy(failedClosed);
        expect(await handle.ping()).toBe(false);
        expect(onDisk(file)).not.toHaveProperty("c");
        expect(failures).toHaveLength(1);
      } finally {
        synced.mockRestore();
        await handle.close();
      }
    },
  );
});

describe("the embedded store on a disk that fills up (a 1 MiB tmpfs)", () => {
  const probe = smallDisk(4096);
  if (typeof probe === "string") console.warn(`skipped: ${probe}`);
  else probe.unmount();
  const itOnDisk = typeof probe === "string" ? it.skip : it;
  /** A database file on a disk of its own, unmounted after the test. */
  let disk: SmallDisk | undefined;
  const fileOnDisk = (name: string) => {
    disk = smallDisk(1024 * 1024) as SmallDisk;
    return join(disk.dir, name);
  };
  afterEach(() => disk?.unmount());

  itOnDisk(
    "when SQLite undoes a group's transaction (SQLITE_FULL mid-group), serves no undone value and writes nothing more",
    async () => {
      const file = fileOnDisk("mid-group.db");
      // Acknowledged by durable(), as the runs store is: calls answer at once, from memory when they can.
      const { handle, store } = notesStore(file, "by durable()");
      await store.add("k", "before");
      await handle.durable();
      const { synced, release } = await heldSyncs(file);
      try {
        await store.add("a", "synced before the failure");
        const aOnDisk = handle.durable();
        await vi.waitFor(() => expect(synced).toHaveBeenCalledTimes(1));
        // The next group stays open while that sync runs, as under load.
        await store.set("k", "undone");
        expect(await store.text("k")).toBe("undone");
        // 4 MiB do not fit in the page cache: they spill to the WAL before the commit, and the 1 MiB disk is full.
        const large = await store.addLarge("large", 4 * 1024 * 1024).then(
          () => "stored",
          (error: unknown) => error,
        );
        expect(large).not.toBe("stored");
        // SQLite has undone the whole transaction, "k" = "undone" with it. A later turn, still in that group:
        await new Promise((resolve) => setTimeout(resolve, 5));
        const [read, later] = await Promise.allSettled([
          store.text("k"),
          store.add("later", "would autocommit, unsynced"),
        ]);
        expect(read).not.toEqual({ status: "fulfilled", value: "undone" });
        expect(read.status).toBe("rejected");
        expect(later.status).toBe("rejected");
        expect(onDisk(file)).toEqual({ a: "synced before the failure", k: "before" });
        release();
        await aOnDisk; // written and synced before the failure: acknowledged
        await expect(handle.durable()).rejects.toSatisfy(failedClosed);
        expect(await handle.ping()).toBe(false);
      } finally {
        synced.mockRestore();
        release();
        await handle.close();
      }
      // A restart recovers from the log: what was acknowledged, nothing else.
      expect(onDisk(file)).toEqual({ a: "synced before the failure", k: "before" });
    },
  );

  itOnDisk(
    "when a group's COMMIT fails (SQLITE_FULL), acknowledges nothing more, even once there is space again, until a restart",
    async () => {
      const file = fileOnDisk("at-commit.db");
      const { handle, store } = notesStore(file, "each call");
      await store.add("k", "before");
      disk!.fill();
      try {
        const results = await Promise.allSettled([store.add("x", "1"), store.set("k", "undone")]);
        expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
        expect(failedClosed((results[0] as PromiseRejectedResult).reason)).toBe(true);
        disk!.free();
        await expect(store.add("y", "space again")).rejects.toSatisfy(failedClosed);
        await expect(store.text("k")).rejects.toSatisfy(failedClosed);
        expect(await handle.ping()).toBe(false);
      } finally {
        disk!.free();
        await handle.close();
      }
      expect(onDisk(file)).toEqual({ k: "before" });
      const { handle: restarted, store: reopened } = notesStore(file, "each call");
      try {
        await reopened.add("y", "after the restart");
        expect(await reopened.text("k")).toBe("before");
        expect(onDisk(file)).toEqual({ k: "before", y: "after the restart" });
      } finally {
        await restarted.close();
      }
    },
  );
});
