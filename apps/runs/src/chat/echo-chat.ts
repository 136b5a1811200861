import type { JsonObject } from "@bufbuild/protobuf";
import { echoModelId, echoPace, tokenize } from "../models/echo.ts";
import { artifactText, contentText } from "./artifact-text.ts";
import type { ChatBackend, ChatCall, ChatReply, ReplyPart } from "./port.ts";
import { nativeToolName } from "./tool-names.ts";

/**
 * loom:echo for chat: no network, the same answer every time, so the whole
 * chat path (tool calls included) is testable offline. It answers
 * "Echo: <last user text>"; a last user text `call <tool>_<activity> <json>`
 * naming one of the request's tools is answered with that tool call (tag
 * `echo-call-<message count>`); a last user message of tool results is
 * answered "Echo: <their texts>".
 */
export function createEchoChat(tokenIntervalMs = 0): ChatBackend {
  const nextToken = echoPace(tokenIntervalMs);
  return {
    id: echoModelId,
    reply: async (call) => {
      call.signal.throwIfAborted();
      return echoReply(call);
    },
    stream: async (call, onDelta) => {
      const { parts, usage } = echoReply(call);
      for (const [index, part] of parts.entries()) {
        if (part.kind === "text") {
          for (const text of tokenize(part.text)) {
            await nextToken();
            call.signal.throwIfAborted();
            await onDelta({ kind: "text", text, index });
          }
        } else {
          await nextToken();
          call.signal.throwIfAborted();
          const { tag, name, path, input } = part.call;
          await onDelta({ kind: "tool-call", index, tag, name, ...(path === undefined ? {} : { path }) });
          await onDelta({ kind: "tool-call", index, partialInput: JSON.stringify(input) });
        }
      }
      return usage;
    },
  };
}

function echoReply(call: ChatCall): ChatReply {
  const last = call.messages.findLast((message) => message.role === "user");
  const results =
    last?.content.flatMap((item) =>
      item.kind.case === "actionResult" && item.kind.value.artifact ? [artifactText(item.kind.value.artifact)] : [],
    ) ?? [];
  const text =
    last?.content
      .flatMap((item) =>
        item.kind.case === "text" && item.kind.value.value.case === "text" ? [item.kind.value.value.value] : [],
      )
      .join("") ?? "";
  const parts: ReplyPart[] = [];
  const asked = results.length === 0 && call.useNativeTools ? askedToolCall(text, call) : undefined;
  if (asked) parts.push({ kind: "tool-call", call: { tag: `echo-call-${call.messages.length}`, ...asked } });
  else parts.push({ kind: "text", text: `Echo: ${results.length > 0 ? results.join("\n") : text}`.trimEnd() });
  const inputTokens = call.messages.reduce(
    (sum, message) => sum + message.content.reduce((n, item) => n + tokenize(contentText(item)).length, 0),
    0,
  );
  const outputTokens = parts.reduce(
    (n, part) => n + tokenize(part.kind === "text" ? part.text : JSON.stringify(part.call.input)).length,
    0,
  );
  return { parts, usage: { inputTokens, outputTokens } };
}

function askedToolCall(text: string, call: ChatCall): { name: string; path?: string; input: JsonObject } | undefined {
  const match = /^call (\S+)\s*(.*)$/s.exec(text.trim());
  if (!match) return undefined;
  for (const tool of call.tools) {
    for (const activity of tool.activities) {
      if (nativeToolName(tool.name, activity.name) !== match[1]) continue;
      let input: unknown = {};
      try {
        input = match[2] ? JSON.parse(match[2]) : {};
      } catch {
        return undefined;
      }
      return {
        name: tool.name,
        path: activity.name,
        input: typeof input === "object" && input !== null && !Array.isArray(input) ? (input as JsonObject) : {},
      };
    }
  }
  return undefined;
}
