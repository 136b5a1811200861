import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newId } from "@loom/contracts/ids";
import { migrate, openSqlite, type SqliteHandle } from "@loom/store/sqlite";
import { afterAll, describe, expect, it } from "vitest";
import type { EventsStore, LogRef, NewEventRecord } from "../src/store/port.ts";
import { createSqliteEventsStore, eventsMigrations } from "../src/store/sqlite.ts";

/** What only the embedded store promises beyond the contract: a file outlives the process, and a batch is all or nothing. */
describe("events store on SQLite", () => {
  const dir = mkdtempSync(join(tmpdir(), "loom-events-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const org = newId();
  const event = (type: string, payload: unknown = null): NewEventRecord => ({
    id: newId(),
    type,
    origin: "USER",
    payloadJson: JSON.stringify(payload),
    timestamp: 1767225600.25,
    createdAt: new Date("2026-03-04T05:06:07.089Z"),
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
    const payloads = [{ n: 1.5, list: [null, { deep: true }] }, null];
    const appended = await before.append(running, org, [event("a", payloads[0]), event("b", payloads[1])]);
    const stored = appended?.map((e, i) => ({ ...e, payload: payloads[i] }));
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
    await expect(
      store.append(log, org, [event("x"), event("y"), { ...event("z"), id: first!.id }], true),
    ).rejects.toThrow();
    expect(await store.list(log, org, 0, 10)).toEqual({ items: [{ ...first, payload: null }], totalCount: 1 });
    expect((await store.append(log, org, [event("next")]))?.map((e) => e.offset)).toEqual([1]);
    await store.close();
  });

  it("reads an open log's row once for all its appends and reads, writes it only to close it, and keeps it once closed", async () => {
    const handle = openSqlite(":memory:");
    let rowReads = 0;
    let rowUpdates = 0;
    const counting: SqliteHandle = {
      ...handle,
      prepare: (sql) => {
        const statement = handle.prepare(sql);
        if (sql.startsWith("UPDATE events_logs"))
          return {
            run: (...params: Parameters<typeof statement.run>) => (rowUpdates++, statement.run(...params)),
          } as typeof statement;
        if (!sql.includes("FROM events_logs l WHERE l.run_kind = ?")) return statement;
        return {
          get: (...params: Parameters<typeof statement.get>) => (rowReads++, statement.get(...params)),
        } as typeof statement;
      },
    };
    const store = createSqliteEventsStore(counting);
    await store.init();
    const log = { runKind: "assistant-run", runId: newId() } satisfies LogRef;
    await store.append(log, org, [event("QUEUED")]);
    await store.append(log, org, [event("STARTING"), event("RUNNING")]);
    expect(await store.list(log, org, 1, 10)).toMatchObject({ totalCount: 3, items: [{ offset: 1 }, { offset: 2 }] });
    expect(rowUpdates).toBe(0); // an append extends the log by its events alone
    await store.append(log, org, [event("SUCCEEDED")], true);
    expect(rowUpdates).toBe(1);
    expect(rowReads).toBe(1); // the first append's look for a log that did not exist yet
    // Closed, it stays in memory (its stream and reads come just after): listed, and a late append refused, with no read of the table.
    expect((await store.list(log, org, 0, 10))?.totalCount).toBe(4);
    await expect(store.append(log, org, [event("late")])).rejects.toMatchObject({ code: 9 }); // FAILED_PRECONDITION
    expect(rowReads).toBe(1);
    await store.close();
  });

  it("moves the events of a version 1 file into version 2's tables, every field and id lookup kept", async () => {
    const file = join(dir, "version-1.db");
    const v1 = openSqlite(file);
    migrate(v1, "events", eventsMigrations.slice(0, 1));
    const structure = { runKind: "structure-run", runId: newId() } satisfies LogRef;
    const assistant = { runKind: "assistant-run", runId: newId() } satisfies LogRef;
    const ids = [newId(), newId(), newId()];
    v1.db.exec(`INSERT INTO events_logs (id, run_kind, run_id, organization_id, length, closed) VALUES
      (1, 'structure-run', '${structure.runId}', '${org}', 2, 0), (2, 'assistant-run', '${assistant.runId}', '${org}', 1, 1)`);
    v1.db.exec(`INSERT INTO events_events (id, log_id, log_offset, type, origin, payload, timestamp, created_at) VALUES
      ('${ids[0]}', 1, 0, 'a', 'USER', '{"n":1.5}', 1767225600.25, 1772600767089),
      ('${ids[1]}', 1, 1, 'b', 'USER', 'null', 1767225601, 1772600767090),
      ('${ids[2]}', 2, 0, 'end', 'SYSTEM', '[true]', 1767225602, 1772600767091)`);
    await v1.close();

    const store = await open(file);
    const first = {
      id: ids[0],
      ...structure,
      organizationId: org,
      offset: 0,
      type: "a",
      origin: "USER",
      payload: { n: 1.5 },
      timestamp: 1767225600.25,
      createdAt: new Date(1772600767089),
    };
    expect(await store.list(structure, org, 0, 10)).toEqual({
      items: [
        first,
        {
          id: ids[1],
          ...structure,
          organizationId: org,
          offset: 1,
          type: "b",
          origin: "USER",
          payload: null,
          timestamp: 1767225601,
          createdAt: new Date(1772600767090),
        },
      ],
      totalCount: 2,
    });
    expect(await store.list(assistant, org, 0, 10)).toEqual({
      items: [
        {
          id: ids[2],
          ...assistant,
          organizationId: org,
          offset: 0,
          type: "end",
          origin: "SYSTEM",
          payload: [true],
          timestamp: 1767225602,
          createdAt: new Date(1772600767091),
        },
      ],
      totalCount: 1,
    });
    expect(await store.get(org, ids[0]!)).toEqual(first);
    expect(await store.get(org, ids[2]!)).toBeUndefined(); // assistant-run events are not read by id
    await expect(store.append(assistant, org, [event("late")])).rejects.toMatchObject({ code: 9 });
    expect((await store.append(structure, org, [event("c")]))?.map((e) => e.offset)).toEqual([2]);
    await store.close();
  });

  it("drops the logs' stored lengths at version 3: a length is the log's last offset + 1, the same as before", async () => {
    const file = join(dir, "version-2.db");
    const handle = openSqlite(file);
    migrate(handle, "events", eventsMigrations.slice(0, 2));
    const log = { runKind: "structure-run", runId: newId() } satisfies LogRef;
    const ids = [newId(), newId(), newId()];
    handle.db.exec(
      `INSERT INTO events_logs (id, run_kind, run_id, organization_id, length, closed) VALUES (1, 'structure-run', '${log.runId}', '${org}', 3, 0)`,
    );
    for (const [offset, id] of ids.entries()) {
      handle.db.exec(
        `INSERT INTO events_by_log (log_id, log_offset, id, type, origin, payload, timestamp, created_at) VALUES (1, ${offset}, '${id}', 't', 'USER', 'null', 1767225600, 1772600767089)`,
      );
    }
    await handle.close();

    const store = await open(file);
    expect((await store.list(log, org, 0, 10))?.totalCount).toBe(3);
    expect((await store.append(log, org, [event("d")]))?.map((e) => e.offset)).toEqual([3]);
    expect((await store.list(log, org, 2, 10))?.items.map((e) => e.offset)).toEqual([2, 3]);
    await store.close();
  });
});
