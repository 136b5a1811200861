import { randomUUID } from "node:crypto";
import { open } from "node:fs/promises";
import { createServer } from "node:http";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";

/**
 * The store-and-sync baseline of the ingest bench: a bare node:http server
 * that writes each POSTed batch of events into SQLite as durably as Loom's
 * embedded store, with none of Loom in the way (nor any of its code): WAL,
 * `synchronous=NORMAL`, the requests of one event-loop turn in one
 * transaction, committed when the turn ends and answered once an fdatasync
 * of the WAL (on the thread pool) has finished; while one runs, the next
 * group gathers. Its tables hold what Loom's hold: per event its id (indexed:
 * structure-run events are read by id), log, offset, type, origin, timestamp,
 * payload JSON and creation time; per run a log with its length. It never
 * checkpoints while it runs (a few seconds of WAL): the floor leaves out work
 * Loom does on another thread.
 */
const file = join(process.env.LOOM_DATA_DIR!, "ingest.db");
const db = new DatabaseSync(file);
db.exec("PRAGMA journal_mode = WAL");
db.exec("PRAGMA synchronous = NORMAL");
db.exec("PRAGMA wal_autocheckpoint = 0");
db.exec(
  `CREATE TABLE logs (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL UNIQUE, length INTEGER NOT NULL);
   CREATE TABLE events (log_id INTEGER NOT NULL, log_offset INTEGER NOT NULL, id TEXT NOT NULL UNIQUE, type TEXT NOT NULL,
     origin TEXT NOT NULL, payload TEXT NOT NULL, timestamp REAL NOT NULL, created_at INTEGER NOT NULL,
     PRIMARY KEY (log_id, log_offset)) WITHOUT ROWID;`,
);
// The WAL exists from the tables' creation for as long as the connection is open; fdatasync flushes whatever wrote it.
const wal = await open(`${file}-wal`, "r");
const begin = db.prepare("BEGIN IMMEDIATE");
const commit = db.prepare("COMMIT");
const rollback = db.prepare("ROLLBACK");
const extendLog = db.prepare(
  `INSERT INTO logs (run_id, length) VALUES (?, ?)
   ON CONFLICT (run_id) DO UPDATE SET length = length + excluded.length RETURNING id, length`,
);
const insertEvent = db.prepare(
  `INSERT INTO events (log_id, log_offset, id, type, origin, payload, timestamp, created_at)
   VALUES (?, ?, ?, ?, 'USER', ?, ?, ?)`,
);

interface NewEvent {
  type: string;
  timestamp: number;
  payload?: unknown;
}

/** The body's events (`{"events": [...]}`, a bare array or one event), or undefined when it holds none or a malformed one. */
function eventsOf(body: unknown): NewEvent[] | undefined {
  const events = Array.isArray(body)
    ? body
    : body && typeof body === "object" && "events" in body
      ? body.events
      : [body];
  if (!Array.isArray(events) || events.length === 0) return undefined;
  const wellFormed = events.every((e) => typeof e?.type === "string" && typeof e.timestamp === "number");
  return wellFormed ? events : undefined;
}

/** The requests whose writes the open transaction holds, each answered when it is on disk (or failed). */
interface Group {
  answers: Array<(error?: unknown) => void>;
  /** Whether its turn has ended: it commits as soon as no sync runs. */
  due: boolean;
}
let group: Group | undefined;
let syncing = false;

/** Commits the group once its turn has ended and no sync runs, then syncs the WAL and answers its requests. */
async function commitGroup() {
  if (!group?.due || syncing) return;
  const { answers } = group;
  group = undefined;
  syncing = true;
  let failure: unknown;
  try {
    commit.run();
    await wal.datasync();
  } catch (error) {
    failure = error;
    if (db.isTransaction) rollback.run();
  }
  syncing = false;
  for (const answer of answers) answer(failure);
  void commitGroup();
}

/** Appends a batch to its run's log in this turn's transaction; resolves once that is committed and synced. */
function append(runId: string, events: NewEvent[]): Promise<void> {
  if (!group) {
    begin.run();
    const opened: Group = (group = { answers: [], due: false });
    setImmediate(() => {
      opened.due = true;
      void commitGroup();
    });
  }
  const waiting = group;
  try {
    const log = extendLog.get(runId, events.length) as { id: number; length: number };
    const first = log.length - events.length;
    const createdAt = Date.now();
    events.forEach((e, i) =>
      insertEvent.run(
        log.id,
        first + i,
        randomUUID(),
        e.type,
        JSON.stringify(e.payload ?? null),
        e.timestamp,
        createdAt,
      ),
    );
  } catch (error) {
    // All or nothing: the group's other writes are undone with this one's, and their requests fail too.
    group = undefined;
    if (db.isTransaction) rollback.run();
    for (const answer of waiting.answers) answer(error);
    return Promise.reject(error);
  }
  return new Promise((resolve, reject) =>
    waiting.answers.push((error) => (error === undefined ? resolve() : reject(error))),
  );
}

createServer(async (req, res) => {
  if (req.url === "/healthz") return void res.end("ok");
  const runId = /^\/structure-runs\/([^/?]+)\/events$/.exec(req.url ?? "")?.[1];
  if (req.method !== "POST" || !runId) return void res.writeHead(404).end();
  let text = "";
  req.setEncoding("utf8");
  for await (const chunk of req) text += chunk;
  let events: NewEvent[] | undefined;
  try {
    events = eventsOf(JSON.parse(text));
  } catch {}
  if (!events) return void res.writeHead(400).end();
  // As Loom's CreateEvents answers: 202, no body.
  await append(runId, events).then(
    () => res.writeHead(202).end(),
    () => res.writeHead(500).end(),
  );
}).listen(Number(process.env.PORT), "127.0.0.1");
process.once("SIGTERM", () => process.exit(0));
