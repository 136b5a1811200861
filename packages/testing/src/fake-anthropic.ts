import type { ServerResponse } from "node:http";
import { pieces, type Reply } from "./fake-openai.ts";

/**
 * Replies in the Anthropic Messages protocol (`POST /v1/messages`), for the
 * same scripted server as fake-openai.ts (startFakeOpenAI: the server is the
 * protocol's; each reply speaks one): JSON, or the named SSE events when the
 * request asks to stream.
 */
type Block =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };

export function anthropicAnswer(text: string, usage = { input_tokens: 13, output_tokens: 5 }): Reply {
  return anthropicReply([{ type: "text", text }], "end_turn", usage);
}

export function anthropicToolUse(
  calls: Array<{ id: string; name: string; input: Record<string, unknown> }>,
  usage = { input_tokens: 21, output_tokens: 8 },
): Reply {
  return anthropicReply(
    calls.map((c) => ({ type: "tool_use" as const, ...c })),
    "tool_use",
    usage,
  );
}

export function anthropicError(status: number, message = "something is wrong"): Reply {
  return (_request, res) => {
    res
      .writeHead(status, { "content-type": "application/json", "retry-after-ms": "1" })
      .end(JSON.stringify({ type: "error", error: { type: "invalid_request_error", message } }));
  };
}

function anthropicReply(
  blocks: Block[],
  stopReason: string,
  usage: { input_tokens: number; output_tokens: number },
): Reply {
  return (request, res) => {
    const message = { id: "msg_1", type: "message", role: "assistant", model: request.body.model, stop_sequence: null };
    if (!request.body.stream) {
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ ...message, content: blocks, stop_reason: stopReason, usage }));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    event(res, "message_start", {
      type: "message_start",
      message: {
        ...message,
        content: [],
        stop_reason: null,
        usage: { input_tokens: usage.input_tokens, output_tokens: 1 },
      },
    });
    blocks.forEach((block, index) => {
      if (block.type === "text") {
        event(res, "content_block_start", {
          type: "content_block_start",
          index,
          content_block: { type: "text", text: "" },
        });
        for (const piece of pieces(block.text))
          event(res, "content_block_delta", {
            type: "content_block_delta",
            index,
            delta: { type: "text_delta", text: piece },
          });
      } else {
        event(res, "content_block_start", {
          type: "content_block_start",
          index,
          content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
        });
        const json = JSON.stringify(block.input);
        const half = Math.floor(json.length / 2);
        for (const partial of [json.slice(0, half), json.slice(half)]) {
          event(res, "content_block_delta", {
            type: "content_block_delta",
            index,
            delta: { type: "input_json_delta", partial_json: partial },
          });
        }
      }
      event(res, "content_block_stop", { type: "content_block_stop", index });
    });
    event(res, "message_delta", {
      type: "message_delta",
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: usage.output_tokens },
    });
    event(res, "message_stop", { type: "message_stop" });
    res.end();
  };
}

function event(res: ServerResponse, name: string, data: unknown): void {
  res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
}
