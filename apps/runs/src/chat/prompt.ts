import { valueToJson } from "@loom/contracts/json-value";
import type { Artifact, ChatMessage, Tool } from "@loom/proto/runs/v1/chat_pb";
import {
  type AssistantContent,
  jsonSchema,
  type ModelMessage,
  type SystemModelMessage,
  type ToolResultPart,
  type ToolSet,
  tool,
  type UserContent,
} from "ai";
import { artifactText, contentText } from "./artifact-text.ts";
import type { ChatCall } from "./port.ts";
import { nativeToolName, structuredOutputTool } from "./tool-names.ts";

/**
 * A griptape PromptStack in the AI SDK's terms, as griptape's own OpenAI and
 * Anthropic drivers map it: system messages lead as instructions, a user
 * message's ActionResultMessageContents become a tool message (the results of
 * the previous assistant message's calls), an assistant's
 * ActionCallMessageContents its tool calls (tag = the call id).
 */
export function toPrompt(messages: ChatMessage[]): { instructions?: SystemModelMessage[]; messages: ModelMessage[] } {
  const instructions: SystemModelMessage[] = [];
  const out: ModelMessage[] = [];
  for (const message of messages) {
    if (message.role === "system") {
      instructions.push({ role: "system", content: message.content.map(contentText).join("") });
    } else if (message.role === "assistant") {
      const content: AssistantContent = message.content.flatMap((item): Exclude<AssistantContent, string> => {
        if (item.kind.case === "actionCall" && item.kind.value.value.case === "action") {
          const action = item.kind.value.value.value;
          return [
            {
              type: "tool-call",
              toolCallId: action.tag,
              toolName: nativeToolName(action.name, action.path),
              input: action.input ?? {},
            },
          ];
        }
        const text = contentText(item);
        return text === "" ? [] : [{ type: "text", text }];
      });
      out.push({ role: "assistant", content });
    } else {
      const results = message.content.flatMap((item): ToolResultPart[] =>
        item.kind.case === "actionResult" ? [toolResult(item.kind.value)] : [],
      );
      if (results.length > 0) out.push({ role: "tool", content: results });
      const content = message.content.flatMap((item): Exclude<UserContent, string> => {
        if (item.kind.case === "actionResult") return [];
        if (item.kind.case === "image" && item.kind.value.value.case === "image") {
          const image = item.kind.value.value.value;
          return [{ type: "file", data: image.data, mediaType: `image/${image.format}` }];
        }
        return [{ type: "text", text: contentText(item) }];
      });
      if (content.length > 0) out.push({ role: "user", content });
    }
  }
  return instructions.length > 0 ? { instructions, messages: out } : { messages: out };
}

function toolResult({
  artifact,
  action,
}: {
  artifact?: Artifact;
  action?: { tag: string; name: string; path?: string };
}): ToolResultPart {
  const value = artifact?.value;
  return {
    type: "tool-result",
    toolCallId: action?.tag ?? "",
    toolName: nativeToolName(action?.name ?? "", action?.path),
    output:
      value?.case === "json"
        ? { type: "json", value: valueToJson(value.value) }
        : { type: "text", value: artifact ? artifactText(artifact) : "" },
  };
}

/**
 * Each activity becomes an AI SDK tool without execute: the model's calls
 * come back to the client, which runs them (griptape agents run tools
 * client-side). With `use_native_tools: false` griptape describes tools in
 * its own prompt, so none are sent. The "tool" structured-output strategy
 * needs griptape's StructuredOutputTool; it is added when the client did not.
 */
export function toToolSet(call: ChatCall): { tools?: ToolSet; toolChoice?: { type: "tool"; toolName: string } } {
  const tools: ToolSet = {};
  if (call.useNativeTools) {
    for (const t of call.tools) addActivities(tools, t);
  }
  if (call.outputSchema && call.structuredOutputStrategy === "tool") {
    const toolName = nativeToolName(structuredOutputTool.name, structuredOutputTool.path);
    tools[toolName] ??= tool({
      description: "Used to provide the final response which ends this conversation.",
      inputSchema: jsonSchema(call.outputSchema),
    });
    return { tools, toolChoice: { type: "tool", toolName } };
  }
  return Object.keys(tools).length > 0 ? { tools } : {};
}

function addActivities(tools: ToolSet, t: Tool): void {
  for (const activity of t.activities) {
    tools[nativeToolName(t.name, activity.name)] = tool({
      description: activity.description,
      inputSchema: jsonSchema(activity.jsonSchema ?? { type: "object", properties: {} }),
    });
  }
}
