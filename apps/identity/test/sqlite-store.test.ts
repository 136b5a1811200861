import { newId } from "@loom/contracts/ids";
import { groupCommitted, openSqlite, type SqliteHandle } from "@loom/store/sqlite";
import { describe, expect, it } from "vitest";
import type { ApiKeyRecord } from "../src/store/port.ts";
import { createSqliteIdentityStore } from "../src/store/sqlite.ts";

/** What only the SQLite adapter does (the contract suite covers what both do). */
describe("the identity store on SQLite", () => {
  it("reads an API key's row once: later reads, a rename, a touch and a delete go through the key held in memory", async () => {
    const handle = openSqlite(":memory:");
    let rowReads = 0;
    const counting: SqliteHandle = {
      ...handle,
      prepare: (sql) => (sql === "SELECT * FROM identity_api_keys WHERE id = ?" && rowReads++, handle.prepare(sql)),
    };
    const store = groupCommitted(handle, createSqliteIdentityStore(counting));
    await store.init();
    const at = new Date("2026-11-24T10:00:00.000Z");
    const key: ApiKeyRecord = {
      id: newId(),
      organizationId: newId(),
      name: "k",
      secretHash: newId(),
      createdBy: "u",
      createdAt: at,
      updatedAt: at,
      lastUsed: at,
    };
    await store.insertApiKey(key);

    expect(await store.getApiKey(key.id)).toEqual(key);
    const handedOut = (await store.getApiKey(key.id))!;
    handedOut.name = "changed by a caller"; // a copy: the held key stays as stored
    expect(await store.getApiKey(key.id)).toEqual(key);
    expect(rowReads).toBe(1);

    const later = new Date("2026-11-24T11:00:00.000Z");
    await store.renameApiKey(key.id, "renamed", later);
    await store.touchApiKey(key.id, later, at);
    await store.touchApiKey(key.id, new Date("2026-11-24T12:00:00.000Z"), at); // seen no longer matches: not written
    const expected = { ...key, name: "renamed", updatedAt: later, lastUsed: later };
    expect(await store.getApiKey(key.id)).toEqual(expected);
    expect(rowReads).toBe(1);
    // What memory holds is what the table holds.
    expect(await createSqliteIdentityStore(handle).getApiKey(key.id)).toEqual(expected);

    expect(await store.deleteApiKey(key.id)).toBe(true);
    expect(await store.getApiKey(key.id)).toBeUndefined();
    expect(rowReads).toBe(2);
    await store.close();
  });

  it("forgets the held keys when writes are undone", async () => {
    const handle = openSqlite(":memory:");
    const store = createSqliteIdentityStore(handle);
    await store.init();
    const at = new Date("2026-11-24T10:00:00.000Z");
    const key: ApiKeyRecord = {
      id: newId(),
      organizationId: newId(),
      name: "k",
      secretHash: newId(),
      createdBy: "u",
      createdAt: at,
      updatedAt: at,
      lastUsed: at,
    };
    await store.insertApiKey(key);
    await store.getApiKey(key.id); // held
    // A rename whose transaction is undone (here by hand; in the service, a failed call or group commit).
    expect(() =>
      handle.transaction(() => {
        void store.renameApiKey(key.id, "undone", new Date()); // runs its statement before its first await
        throw new Error("undone");
      }),
    ).toThrow("undone");
    expect((await store.getApiKey(key.id))?.name).toBe("k");
    await store.close();
  });
});
