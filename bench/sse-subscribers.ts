import { connect } from "node:net";
import { parentPort, workerData } from "node:worker_threads";

/**
 * One thread's share of the fan-out benchmark's SSE subscribers (the bench
 * starts BENCH_SUBSCRIBER_THREADS of them, so that reading a million frames
 * a second does not hold up the appender's clock). Opens `subscribers`
 * streams, says "connected", and when every stream has ended (or it is told
 * "stop") answers with what arrived: the count and each event's latency from
 * its `sent` time.
 */
export interface SubscribersInput {
  url: string;
  headers: Record<string, string>;
  subscribers: number;
  /** The offset every stream's first event must have (the replay bench: 0); unset, any. */
  firstOffset?: number;
}

export type SubscribersMessage =
  | { kind: "connected" }
  /** `startedAt` when the thread began opening its streams, `endedAt` when the last one ended (or "stop"): epoch ms. */
  | { kind: "done"; delivered: number; latencies: Float64Array; ended: number; startedAt: number; endedAt: number }
  | { kind: "failed"; message: string };

const now = () => performance.timeOrigin + performance.now();
const { url, headers, subscribers, firstOffset } = workerData as SubscribersInput;
let latencies = new Float64Array(1 << 20);
let delivered = 0;

function record(latency: number): void {
  if (delivered === latencies.length) {
    const grown = new Float64Array(latencies.length * 2);
    grown.set(latencies);
    latencies = grown;
  }
  latencies[delivered++] = latency;
}

const sentField = '"sent":';
const [ZERO, NINE, DOT, NEWLINE, CR] = [0x30, 0x39, 0x2e, 0x0a, 0x0d];

/** Where the last number read by numberAt ended (a variable, not a returned object: no garbage per frame). */
let numberEnd = 0;

/** The decimal number (digits, maybe a fraction) at `at`: cheaper than slice + Number per frame. */
function numberAt(text: string, at: number): number {
  let value = 0;
  let i = at;
  for (let c = text.charCodeAt(i); c >= ZERO && c <= NINE; c = text.charCodeAt(++i)) value = value * 10 + (c - ZERO);
  if (i === at) throw new Error(`no number at: ${text.slice(at, at + 20)}`);
  if (text.charCodeAt(i) === DOT) {
    let scale = 1;
    for (let c = text.charCodeAt(++i); c >= ZERO && c <= NINE; c = text.charCodeAt(++i))
      value += (c - ZERO) / (scale *= 10);
  }
  numberEnd = i;
  return value;
}

/** One HTTP/1.1 response read off a raw socket: the status, then the chunked body's data as it arrives. */
interface RawResponse {
  status: Promise<number>;
  ended: Promise<void>;
}

/**
 * A GET over a plain socket, reading into one reused buffer (`onread`) and
 * decoding the bytes as latin1 (the frames the server sends in this bench are
 * ASCII): at twenty thousand reads a second, node:http's parser and streams
 * and a fresh 64 KiB buffer per read (each one external memory that brings a
 * mark-compact closer) were most of this thread's time (measured:
 * docs/benchmarks.md, "Method"). Understands just what the gateway answers: a status
 * line, headers, and a chunked body (a stream) or one of a Content-Length
 * (a whole finished log at once).
 */
function rawGet(
  target: URL,
  requestHeaders: Record<string, string>,
  onData: (text: string, at: number) => void,
): RawResponse {
  let settleStatus!: (status: number) => void;
  let fail!: (error: Error) => void;
  const status = new Promise<number>((resolve, reject) => ((settleStatus = resolve), (fail = reject)));
  let head = "";
  let inBody = false;
  /** Bytes of the current chunk's data still to come. */
  let dataLeft = 0;
  /** Characters of the CRLF after a chunk's data still to come. */
  let crlfLeft = 0;
  /** A chunk-size line split across reads. */
  let sizeLine = "";
  let resolveEnded!: () => void;
  /** Bytes of a Content-Length body still to come; -1 for a chunked one. */
  let lengthLeft = -1;

  const lengthBody = (text: string, at: number) => {
    lengthLeft -= text.length;
    if (text) onData(text, at);
    if (lengthLeft <= 0) {
      socket.destroy();
      resolveEnded();
    }
  };

  const body = (text: string, at: number) => {
    if (lengthLeft !== -1) return lengthBody(text, at);
    let i = 0;
    let data = "";
    while (i < text.length) {
      if (dataLeft > 0) {
        const take = Math.min(dataLeft, text.length - i);
        data += text.slice(i, i + take);
        dataLeft -= take;
        i += take;
        if (dataLeft === 0) crlfLeft = 2;
      } else if (crlfLeft > 0) {
        if (text.charCodeAt(i) !== (crlfLeft === 2 ? CR : NEWLINE)) throw new Error("no CRLF after a chunk's data");
        crlfLeft -= 1;
        i += 1;
      } else {
        const lineEnd = text.indexOf("\n", i);
        if (lineEnd === -1) {
          sizeLine += text.slice(i);
          break;
        }
        const line = sizeLine + text.slice(i, lineEnd + 1);
        sizeLine = "";
        i = lineEnd + 1;
        if (!/^[0-9a-f]+\r\n$/i.test(line)) throw new Error(`not a chunk size line: ${line.slice(0, 40)}`);
        dataLeft = Number.parseInt(line, 16);
        if (dataLeft === 0) {
          if (data) onData(data, at);
          socket.destroy();
          resolveEnded();
          return;
        }
      }
    }
    if (data) onData(data, at);
  };

  const readBuffer = Buffer.allocUnsafe(256 * 1024);
  const socket = connect({
    host: target.hostname,
    port: Number(target.port),
    onread: {
      buffer: readBuffer,
      callback(bytes) {
        // Every frame of a read arrived at the same moment.
        const at = now();
        let text = readBuffer.toString("latin1", 0, bytes);
        try {
          if (!inBody) {
            head += text;
            const headEnd = head.indexOf("\r\n\r\n");
            if (headEnd === -1) return true;
            const code = Number(head.slice(9, 12));
            if (code !== 200) throw new Error(`a stream answered ${code}`);
            const headers = head.slice(0, headEnd + 2);
            const length = /\r\ncontent-length: (\d+)\r\n/i.exec(headers);
            if (length) lengthLeft = Number(length[1]);
            else if (!/\r\ntransfer-encoding: chunked\r\n/i.test(headers))
              throw new Error("the stream's body is neither chunked nor of a length");
            inBody = true;
            settleStatus(code);
            text = head.slice(headEnd + 4);
            head = "";
          }
          body(text, at);
        } catch (error) {
          fail(error as Error);
          socket.destroy(error as Error);
        }
        return true;
      },
    },
  });
  const closedEarly = () => new Error("the stream closed before its last chunk");
  socket.once("error", fail).once("close", () => fail(closedEarly()));
  const ended = new Promise<void>((resolve, reject) => {
    resolveEnded = resolve;
    status.catch(reject);
    socket.once("error", reject).once("close", () => reject(closedEarly()));
  });
  ended.catch(() => {}); // seen by whoever awaits it; a failed status is reported through `status`
  const lines = Object.entries({ host: target.host, ...requestHeaders }).map(
    ([name, value]) => `${name}: ${value}\r\n`,
  );
  socket.write(`GET ${target.pathname}${target.search} HTTP/1.1\r\n${lines.join("")}\r\n`);
  return { status, ended };
}

/**
 * Reads one stream's frames. Not eventsource-parser, as the tests use: at a
 * million frames a second the library's line parser alone took a core of
 * this two-core machine (measured), and the subscribers' CPU is taken from
 * the server's. This scanner knows the server's framing (`id:` line, one
 * `data:` line, blank line) and checks it: offsets must arrive one apart,
 * so a lost, repeated or reordered event fails the run instead of only
 * changing a count.
 */
async function subscribe(): Promise<{ reading: Promise<void> }> {
  let lastId = -1;
  let carry = "";
  // Where `"sent":` sits after a frame's start: the same in every frame of
  // this bench (fixed-length ids, same type), so it is found once and then
  // checked in place; any other layout falls back to a search.
  let sentAt = -1;
  const frames = (text: string, at: number) => {
    let start = 0;
    for (let end = text.indexOf("\n\n"); end !== -1; start = end + 2, end = text.indexOf("\n\n", start)) {
      if (text.startsWith(": ", start)) continue; // a keep-alive comment
      if (!text.startsWith("id: ", start)) throw new Error(`not an SSE event frame: ${text.slice(start, start + 40)}`);
      const id = numberAt(text, start + 4);
      if (text.charCodeAt(numberEnd) !== NEWLINE)
        throw new Error(`not an SSE id line: ${text.slice(start, start + 40)}`);
      if (lastId !== -1 && id !== lastId + 1) throw new Error(`offset ${id} after ${lastId}`);
      if (lastId === -1 && firstOffset !== undefined && id !== firstOffset)
        throw new Error(`a stream began at offset ${id}, not ${firstOffset}`);
      lastId = id;
      let sent = start + sentAt;
      if (sentAt === -1 || !text.startsWith(sentField, sent)) {
        sent = text.indexOf(sentField, start);
        if (sent === -1 || sent > end) continue; // not a timed event
        sentAt = sent - start;
      }
      record(at - numberAt(text, sent + sentField.length));
    }
    return text.slice(start);
  };
  const response = rawGet(new URL(url), headers, (text, at) => {
    carry = frames(carry === "" ? text : carry + text, at);
  });
  await response.status;
  // Wrapped: an async function returning the read loop itself would wait for the stream's end.
  return { reading: response.ended };
}

let ended = 0;
const startedAt = now();
const report = () => {
  const message: SubscribersMessage = {
    kind: "done",
    delivered,
    latencies: latencies.slice(0, delivered),
    ended,
    startedAt,
    endedAt: now(),
  };
  parentPort!.postMessage(message, [message.latencies.buffer as ArrayBuffer]);
};
parentPort!.once("message", report); // "stop": the streams did not all end in time

try {
  const readers = await Promise.all(Array.from({ length: subscribers }, subscribe));
  parentPort!.postMessage({ kind: "connected" } satisfies SubscribersMessage);
  await Promise.all(readers.map((r) => r.reading.then(() => (ended += 1))));
  report();
} catch (error) {
  parentPort!.postMessage({ kind: "failed", message: (error as Error).message } satisfies SubscribersMessage);
}
