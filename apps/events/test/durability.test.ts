import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { createMemoryBus } from "@loom/bus/memory";
import { newId } from "@loom/contracts/ids";
import { subjects } from "@loom/contracts/subjects";
import { EventsService, NewEventSchema, RunKind } from "@loom/proto/events/v1/events_pb";
import { headersFor } from "@loom/server/principal";
import { type RunningServer, startRpcServer } from "@loom/server/rpc-server";
import { httpTransport } from "@loom/server/transports";
import { openSqlite, type SqliteHandle } from "@loom/store/sqlite";
import { createLogger } from "@loom/telemetry/logger";
import { heldSyncs } from "@loom/testing/held-syncs";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { openEventsStore, wireEvents } from "../src/wiring.ts";

const serviceToken = "events-test-token-0123456789";

/**
 * When an append is answered and published on a SQLite file (the all-in-one's
 * wiring, `runLogsCoveredByRuns`): never published before it is on disk; a
 * structure-run append (a user's) answered only then, an assistant-run
 * append (the runs worker's) as soon as it is written.
 */
describe("events on a SQLite file: answers and publishing against the disk", () => {
  const dir = mkdtempSync(join(tmpdir(), "loom-events-durability-"));
  const file = join(dir, "loom.db");
  const bus = createMemoryBus();
  const who = { headers: headersFor({ userId: newId(), organizationId: newId() }) };
  let handle: SqliteHandle;
  let server: RunningServer;
  let client: Client<typeof EventsService>;

  beforeAll(async () => {
    handle = openSqlite(file);
    const store = await openEventsStore({ db: "events", sqlite: handle });
    server = await startRpcServer({
      services: [await wireEvents(store, bus, undefined, { runLogsCoveredByRuns: true })],
      serviceToken,
      logger: createLogger("test", "silent"),
    });
    client = createClient(EventsService, httpTransport(server.url, serviceToken));
    await client.appendEvents(
      {
        runKind: RunKind.STRUCTURE_RUN,
        runId: newId(),
        events: [create(NewEventSchema, { type: "Warm", origin: "USER", timestamp: 1 })],
      },
      who,
    );
  });
  afterAll(async () => {
    await server?.close();
    await handle?.close();
    await bus.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const append = (runKind: RunKind, runId: string, type: string) =>
    client.appendEvents(
      { runKind, runId, events: [create(NewEventSchema, { type, origin: "SYSTEM", timestamp: 1 })] },
      who,
    );
  const published = (kind: "assistant-run" | "structure-run", runId: string) => {
    const seen: Uint8Array[] = [];
    const subscription = bus.subscribe(subjects.events(kind, runId), (data) => seen.push(data));
    return { seen, unsubscribe: () => subscription.unsubscribe() };
  };
  const quietMoment = () => new Promise((r) => setTimeout(r, 50));

  it("answers the runs worker's append once written, and publishes its events only once they are on disk", async () => {
    const runId = newId();
    const bus = published("assistant-run", runId);
    const { synced, release } = await heldSyncs(file);
    try {
      const answer = await append(RunKind.ASSISTANT_RUN, runId, "AssistantRunQueued"); // answered while the sync is held
      expect(answer.events.map((e) => e.offset)).toEqual([0n]);
      await vi.waitFor(() => expect(synced).toHaveBeenCalledTimes(1));
      await quietMoment();
      expect(bus.seen).toHaveLength(0);
      release();
      await vi.waitFor(() => expect(bus.seen).toHaveLength(1));
    } finally {
      synced.mockRestore();
      bus.unsubscribe();
    }
  });

  it("answers a user's structure-run append, and publishes it, only once it is on disk", async () => {
    const runId = newId();
    const bus = published("structure-run", runId);
    const { synced, release } = await heldSyncs(file);
    try {
      let answered = false;
      const answer = append(RunKind.STRUCTURE_RUN, runId, "StartStructureRunEvent").then(() => (answered = true));
      await vi.waitFor(() => expect(synced).toHaveBeenCalledTimes(1));
      await quietMoment();
      expect(answered).toBe(false);
      expect(bus.seen).toHaveLength(0);
      release();
      await answer;
      expect(bus.seen).toHaveLength(1);
    } finally {
      synced.mockRestore();
      bus.unsubscribe();
    }
  });
});
