import { newId } from "@loom/contracts/ids";
import { openSqlite, type SqliteHandle } from "@loom/store/sqlite";
import { describe, expect, it } from "vitest";
import type { AssistantRecord } from "../src/store/port.ts";
import { createSqliteAssistantsStore } from "../src/store/sqlite.ts";

const org = newId();
const at = new Date("2026-03-04T05:06:07.089Z");
const assistant = (): AssistantRecord => ({
  id: newId(),
  organizationId: org,
  name: "a",
  description: "",
  knowledgeBaseIds: [],
  retrieverIds: [newId()],
  rulesetIds: [],
  structureIds: [],
  toolIds: [newId()],
  createdBy: "u",
  createdAt: at,
  updatedAt: at,
});

/** What only the SQLite adapter promises beyond the store contract. */
describe("assistants store on SQLite", () => {
  it("holds assistants once read, written through: copies to callers, updates and deletes reach later reads, undone writes forgotten", async () => {
    const handle = openSqlite(":memory:");
    let reads = 0;
    const counting: SqliteHandle = {
      ...handle,
      prepare: (sql) => (
        sql.startsWith("SELECT * FROM assistants_assistants WHERE id") && reads++, handle.prepare(sql)
      ),
    };
    const store = createSqliteAssistantsStore(counting);
    await store.init();
    const a = assistant();
    await store.insert(a);

    const first = (await store.get(org, a.id))!;
    first.toolIds.push("changed by a caller");
    expect(await store.get(org, a.id)).toEqual(a);
    expect(reads).toBe(1); // the second read is the held record's
    expect(await store.get(newId(), a.id)).toBeUndefined();

    await store.update(org, a.id, { name: "renamed", toolIds: [] }, new Date(at.getTime() + 1000));
    expect(await store.get(org, a.id)).toMatchObject({ name: "renamed", toolIds: [] });

    // An update undone with its transaction: the row's name comes back, read again from the table.
    expect(() =>
      handle.transaction(() => {
        void store.update(org, a.id, { name: "undone" }, new Date(at.getTime() + 2000));
        throw new Error("undone");
      }),
    ).toThrow("undone");
    const readsBefore = reads;
    expect((await store.get(org, a.id))?.name).toBe("renamed");
    expect(reads).toBe(readsBefore + 1);

    expect(await store.delete(org, a.id)).toBe(true);
    expect(await store.get(org, a.id)).toBeUndefined();
    await handle.close();
  });
});
