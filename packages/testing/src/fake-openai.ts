import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One request as the fake server received it. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body: any;
  /** Resolves when the client goes away before the answer is complete (an abort). */
  closedEarly: Promise<void>;
  /** `performance.now()` when the request arrived, before its body was read (a benchmark's clock). */
  arrivedAt: number;
}

export type Reply = (request: ReceivedRequest, res: ServerResponse) => void;

/**
 * A real HTTP server speaking OpenAI chat completions, on port 0, so the AI
 * SDK and its OpenAI-compatible provider run unmocked, fetch and all.
 */
export async function startFakeOpenAI() {
  const requests: ReceivedRequest[] = [];
  const arrivals: Array<(request: ReceivedRequest) => void> = [];
  let reply: Reply = answer("Hello there, world!");
  const server = createServer(async (req, res) => {
    const arrivedAt = performance.now();
    let raw = "";
    for await (const chunk of req) raw += chunk;
    const closedEarly = new Promise<void>((resolve) => res.on("close", () => res.writableFinished || resolve()));
    const request: ReceivedRequest = {
      method: req.method ?? "",
      path: req.url ?? "",
      headers: req.headers,
      body: raw ? JSON.parse(raw) : undefined,
      closedEarly,
      arrivedAt,
    };
    requests.push(request);
    arrivals.splice(0).forEach((notify) => notify(request));
    reply(request, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    /** How the next requests are answered. */
    reply: (next: Reply) => {
      reply = next;
    },
    /** The next request to arrive. */
    nextRequest: () => new Promise<ReceivedRequest>((resolve) => arrivals.push(resolve)),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export type FakeOpenAI = Awaited<ReturnType<typeof startFakeOpenAI>>;

/** Words with their leading space, as a model streams them. */
export const pieces = (text: string) => text.match(/\s*\S+/g) ?? [];

/** A successful completion: JSON, or SSE chunks when the request asks to stream. */
export function answer(
  text: string,
  usage = { prompt_tokens: 11, completion_tokens: 7 },
  finishReason = "stop",
): Reply {
  const totals = { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
  return (request, res) => {
    const base = { id: "chatcmpl-1", created: 1_700_000_000, model: request.body.model };
    if (!request.body.stream) {
      json(res, 200, {
        ...base,
        object: "chat.completion",
        choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: finishReason }],
        usage: totals,
      });
      return;
    }
    const chunk = (choices: unknown[], extra: object = {}) => ({
      ...base,
      object: "chat.completion.chunk",
      choices,
      ...extra,
    });
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    sse(res, chunk([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]));
    for (const piece of pieces(text)) sse(res, chunk([{ index: 0, delta: { content: piece }, finish_reason: null }]));
    sse(res, chunk([{ index: 0, delta: {}, finish_reason: finishReason }]));
    // As OpenAI does: usage only when asked for, in a last chunk without choices.
    if (request.body.stream_options?.include_usage) sse(res, chunk([], { usage: totals }));
    res.end("data: [DONE]\n\n");
  };
}

/** A model's tool call as the fake answers it. */
export interface FakeToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

/**
 * A completion that calls tools (finish_reason "tool_calls"): JSON, or SSE
 * chunks when streaming, the arguments cut in two pieces as OpenAI streams them.
 */
export function callTools(
  calls: FakeToolCall[],
  usage = { prompt_tokens: 20, completion_tokens: 9 },
  text?: string,
): Reply {
  const totals = { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };
  return (request, res) => {
    const base = { id: "chatcmpl-2", created: 1_700_000_000, model: request.body.model };
    if (!request.body.stream) {
      const toolCalls = calls.map((c) => ({
        id: c.id,
        type: "function",
        function: { name: c.name, arguments: JSON.stringify(c.arguments) },
      }));
      json(res, 200, {
        ...base,
        object: "chat.completion",
        choices: [
          {
            index: 0,
            message: { role: "assistant", content: text ?? null, tool_calls: toolCalls },
            finish_reason: "tool_calls",
          },
        ],
        usage: totals,
      });
      return;
    }
    const chunk = (choices: unknown[], extra: object = {}) => ({
      ...base,
      object: "chat.completion.chunk",
      choices,
      ...extra,
    });
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    for (const piece of text === undefined ? [] : pieces(text))
      sse(res, chunk([{ index: 0, delta: { role: "assistant", content: piece }, finish_reason: null }]));
    calls.forEach((c, index) => {
      const args = JSON.stringify(c.arguments);
      const half = Math.floor(args.length / 2);
      sse(
        res,
        chunk([
          {
            index: 0,
            delta: {
              role: "assistant",
              tool_calls: [
                { index, id: c.id, type: "function", function: { name: c.name, arguments: args.slice(0, half) } },
              ],
            },
            finish_reason: null,
          },
        ]),
      );
      sse(
        res,
        chunk([
          {
            index: 0,
            delta: { tool_calls: [{ index, function: { arguments: args.slice(half) } }] },
            finish_reason: null,
          },
        ]),
      );
    });
    sse(res, chunk([{ index: 0, delta: {}, finish_reason: "tool_calls" }]));
    if (request.body.stream_options?.include_usage) sse(res, chunk([], { usage: totals }));
    res.end("data: [DONE]\n\n");
  };
}

/**
 * Replies in turn: the first request gets `replies[0]`, the next `replies[1]`,
 * and every later one the last (an agent loop's script: call tools, then
 * answer from their results). Counts from when it is set.
 */
export function inTurn(...replies: Reply[]): Reply {
  let next = 0;
  return (request, res) => replies[Math.min(next++, replies.length - 1)]!(request, res);
}

/** Streams `firstPiece`, then cuts the connection: a provider failing mid-answer. */
export function cutAfter(firstPiece: string): Reply {
  return (request, res) => {
    streamFirstPiece(request, res, firstPiece);
    setTimeout(() => res.destroy(), 20);
  };
}

/** Opens a streamed answer with one piece of text (and says nothing more). */
function streamFirstPiece(request: { body: { model?: unknown } }, res: ServerResponse, piece: string): void {
  res.writeHead(200, { "content-type": "text/event-stream" });
  sse(res, {
    id: "chatcmpl-1",
    created: 1_700_000_000,
    model: request.body.model,
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta: { role: "assistant", content: piece }, finish_reason: null }],
  });
}

/**
 * A slow model: streams `text` one piece every `intervalMs`, then ends as
 * `answer` does. `firstPieceMs` (default `intervalMs`) is when the first piece
 * comes: a model's time to first token, which the streaming benchmark fixes.
 */
export function trickle(text: string, intervalMs: number, firstPieceMs = intervalMs): Reply {
  return (request, res) => {
    const base = {
      id: "chatcmpl-1",
      created: 1_700_000_000,
      model: request.body.model,
      object: "chat.completion.chunk",
    };
    const queue: unknown[] = pieces(text).map((piece) => ({
      ...base,
      choices: [{ index: 0, delta: { content: piece }, finish_reason: null }],
    }));
    queue.push({ ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] });
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    let timer: NodeJS.Timeout | undefined;
    const next = () => {
      const chunk = queue.shift();
      if (!chunk) return res.end("data: [DONE]\n\n");
      sse(res, chunk);
      timer = setTimeout(next, intervalMs);
    };
    timer = setTimeout(next, firstPieceMs);
    res.on("close", () => clearTimeout(timer));
  };
}

/** An OpenAI-style error answer. `retry-after-ms` keeps the SDK's retries fast. */
export function failWith(status: number, message = "something is wrong"): Reply {
  return (_request, res) =>
    json(res, status, { error: { message, type: "invalid_request_error", code: null } }, { "retry-after-ms": "1" });
}

/** Answers nothing (non-streaming) or one chunk then nothing (streaming): the client must abort. */
export function hang(firstPiece = "Partial"): Reply {
  return (request, res) => {
    if (!request.body.stream) return;
    streamFirstPiece(request, res, firstPiece);
  };
}

function sse(res: ServerResponse, data: unknown): void {
  res.write(`data: ${JSON.stringify(data)}\n\n`);
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
}
