import { randomUUID } from "node:crypto";
import { createServer, type ServerResponse } from "node:http";

/**
 * The fan-out baseline: a bare node:http server that broadcasts what it is
 * sent as SSE frames, with none of Loom in the way (no store, no bus, no
 * auth). Same routes and frames as the gateway (`id: <offset>` and the same
 * event JSON), so the fan-out bench and its subscriber threads drive it
 * unchanged: each POST's events become one string, encoded once, written to
 * every stream of the run at once; StructureRunCompleted ends the streams.
 * With WRITE_INTERVAL_MS, the frames of that many ms go out together as one
 * write per stream, as the gateway batches them (docs/decisions.md, "SSE streams").
 * It also serves the replay bench's baseline: a stream opened on a run that
 * has ended gets the whole log at once, one Buffer kept for every stream (as
 * the gateway keeps finished logs), and `GET /users` answers for its poller.
 */
interface Run {
  next: number;
  streams: Set<ServerResponse>;
  pending: string;
  ends: boolean;
  flushAt?: NodeJS.Timeout;
  /** Every frame so far, and the whole stream of an ended run as bytes. */
  log: string;
  replay?: Buffer;
}
const writeIntervalMs = Number(process.env.WRITE_INTERVAL_MS ?? 0);
const runs = new Map<string, Run>();
const runOf = (id: string) =>
  runs.get(id) ?? runs.set(id, { next: 0, streams: new Set(), pending: "", ends: false, log: "" }).get(id)!;

function flush(run: Run): void {
  run.flushAt = undefined;
  const chunk = Buffer.from(run.pending);
  run.pending = "";
  for (const stream of run.streams) run.ends ? stream.end(chunk) : stream.write(chunk);
}
const route = /^\/structure-runs\/([^/]+)\/events(\/stream)?$/;

const server = createServer(async (req, res) => {
  if (req.url === "/healthz") return void res.end('{"status":"ok"}');
  if (req.url === "/users") return void res.writeHead(200, { "Content-Type": "application/json" }).end('{"users":[]}');
  const match = route.exec(req.url ?? "");
  if (!match) return void ((res.statusCode = 404), res.end());
  const run = runOf(match[1]!);
  if (req.method === "GET" && match[2] && run.ends && run.pending === "") {
    run.replay ??= Buffer.from(`: keep-alive\n\n${run.log}`);
    return void res
      .writeHead(200, {
        "Content-Type": "text/event-stream; charset=utf-8",
        "Cache-Control": "no-cache",
        "Content-Length": run.replay.length,
      })
      .end(run.replay);
  }
  if (req.method === "GET" && match[2]) {
    res.writeHead(200, { "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache" });
    res.write(": keep-alive\n\n");
    run.streams.add(res);
    res.once("close", () => run.streams.delete(res));
    return;
  }
  let text = "";
  for await (const chunk of req) text += chunk;
  const body = JSON.parse(text) as unknown;
  const events = (Array.isArray(body) ? body : [body]) as Array<{ type: string; timestamp: number; payload?: unknown }>;
  const now = new Date().toISOString();
  for (const e of events) {
    const json = {
      event_id: randomUUID(),
      structure_run_id: match[1],
      type: e.type,
      origin: "USER",
      payload: e.payload ?? {},
      timestamp: e.timestamp,
      created_at: now,
    };
    const frame = `id: ${run.next++}\ndata: ${JSON.stringify(json)}\n\n`;
    run.pending += frame;
    run.log += frame;
  }
  run.ends ||= events.some((e) => e.type === "StructureRunCompleted");
  if (writeIntervalMs === 0) flush(run);
  else run.flushAt ??= setTimeout(() => flush(run), writeIntervalMs);
  res.statusCode = 202;
  res.end();
});
server.listen({ port: Number(process.env.PORT), host: "127.0.0.1", backlog: 4096 });
process.once("SIGTERM", () => process.exit(0));
