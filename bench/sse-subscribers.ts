import { get, type IncomingMessage } from "node:http";
import { parentPort, workerData } from "node:worker_threads";

/**
 * The fan-out benchmark's SSE subscribers, on a thread of their own so that
 * parsing a million frames a second does not hold up the appender's clock.
 * Opens `subscribers` streams, says "connected", and when every stream has
 * ended (or it is told "stop") answers with what arrived: the count and each
 * event's latency from its `sent` time.
 */
export interface SubscribersInput {
  url: string;
  headers: Record<string, string>;
  subscribers: number;
}

export type SubscribersMessage = { kind: "connected" } | { kind: "done"; delivered: number; latencies: Float64Array } | { kind: "failed"; message: string };

const now = () => performance.timeOrigin + performance.now();
const { url, headers, subscribers } = workerData as SubscribersInput;
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
const [ZERO, NINE, DOT, NEWLINE] = [0x30, 0x39, 0x2e, 0x0a];

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
    for (let c = text.charCodeAt(++i); c >= ZERO && c <= NINE; c = text.charCodeAt(++i)) value += (c - ZERO) / (scale *= 10);
  }
  numberEnd = i;
  return value;
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
  const res = await new Promise<IncomingMessage>((resolve, reject) => get(url, { headers, agent: false }, resolve).once("error", reject));
  if (res.statusCode !== 200) throw new Error(`a stream answered ${res.statusCode}`);
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
      if (text.charCodeAt(numberEnd) !== NEWLINE) throw new Error(`not an SSE id line: ${text.slice(start, start + 40)}`);
      if (lastId !== -1 && id !== lastId + 1) throw new Error(`offset ${id} after ${lastId}`);
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
  const reading = new Promise<void>((resolve, reject) => {
    res.setEncoding("utf8");
    // Every frame of a chunk arrived at the same moment.
    res.on("data", (text: string) => {
      try {
        carry = frames(carry + text, now());
      } catch (error) {
        res.destroy(error as Error);
      }
    });
    res.once("end", resolve).once("error", reject);
  });
  // Wrapped: an async function returning the read loop itself would wait for the stream's end.
  return { reading };
}

const report = () => {
  const message: SubscribersMessage = { kind: "done", delivered, latencies: latencies.slice(0, delivered) };
  parentPort!.postMessage(message, [message.latencies.buffer as ArrayBuffer]);
};
parentPort!.once("message", report); // "stop": the streams did not all end in time

try {
  const readers = await Promise.all(Array.from({ length: subscribers }, subscribe));
  parentPort!.postMessage({ kind: "connected" } satisfies SubscribersMessage);
  await Promise.all(readers.map((r) => r.reading));
  report();
} catch (error) {
  parentPort!.postMessage({ kind: "failed", message: (error as Error).message } satisfies SubscribersMessage);
}
