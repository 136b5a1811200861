import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { newId } from "@loom/kit/ids";
import { openSqlite } from "@loom/kit/sqlite";
import { createSqliteEventsStore } from "../src/store/sqlite.ts";
import type { EventsStore, LogRef, NewEventRecord } from "../src/store/port.ts";

/** What only the embedded store promises beyond the contract: a file outlives the process, and a batch is all or nothing. */
describe("events store on SQLite", () => {
  const dir = mkdtempSync(join(tmpdir(), "loom-events-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const org = newId();
  const event = (type: string, payload: NewEventRecord["payload"] = null): NewEventRecord => ({
    id: newId(), type, origin: "USER", payload, timestamp: 1767225600.25, createdAt: new Date("2026-03-04T05:06:07.089Z"),
  });
  const open = async (file: string): Promise<EventsStore> => {
    const store = createSqliteEventsStore(openSqlite(file));
    await store.init();
    return store;
  };

  it("keeps logs, their lengths, owners and closed ends in its file across a restart", async () => {
    const file = join(dir, "restart.db");
    const running = { runKind: "structure-run", runId: newId() } satisfies LogRef;
    const closed = { runKind: "assistant-run", runId: newId() } satisfies LogRef;
    const before = await open(file);
    const stored = await before.append(running, org, [event("a", { n: 1.5, list: [null, { deep: true }] }), event("b")]);
    await before.append(closed, org, [event("end")], true);
    await before.close();

    const after = await open(file);
    expect(await after.list(running, org, 0, 10)).toEqual({ items: stored, totalCount: 2 });
    expect(await after.get(org, stored![0]!.id)).toEqual(stored![0]);
    expect((await after.append(running, org, [event("c")]))?.map((e) => e.offset)).toEqual([2]);
    expect(await after.append(running, newId(), [event("foreign")])).toBeUndefined();
    await expect(after.append(closed, org, [event("late")])).rejects.toMatchObject({ code: 9 }); // FAILED_PRECONDITION
    await after.close();
  });

  it("stores nothing of a batch that fails part-way, and the next append takes the offsets it would have had", async () => {
    const store = await open(":memory:");
    const log = { runKind: "structure-run", runId: newId() } satisfies LogRef;
    const [first] = (await store.append(log, org, [event("first")]))!;
    // The third event reuses a stored id: the insert fails after two of the batch went in.
    await expect(store.append(log, org, [event("x"), event("y"), { ...event("z"), id: first!.id }], true)).rejects.toThrow();
    expect(await store.list(log, org, 0, 10)).toEqual({ items: [first], totalCount: 1 });
    expect((await store.append(log, org, [event("next")]))?.map((e) => e.offset)).toEqual([1]);
    await store.close();
  });
});
