import type { JsonObject } from "@bufbuild/protobuf";
import type { ChatMessage, Tool } from "@loom/proto/runs/v1/chat_pb";

/**
 * One chat call, checked: what a chat backend (the AI SDK, loom:echo) needs
 * from a CreateChatMessage or StreamChatMessage request.
 */
export interface ChatCall {
  messages: ChatMessage[];
  tools: Tool[];
  outputSchema?: JsonObject;
  maxTokens?: number;
  temperature?: number;
  useNativeTools: boolean;
  structuredOutputStrategy: StructuredOutputStrategy;
  /** AI SDK call settings from the `extra_params` allow-list (extra-params.ts). */
  settings: CallSettings;
  /** Aborting it aborts the provider request. */
  signal: AbortSignal;
}

export const structuredOutputStrategies = ["native", "tool", "rule"] as const;
export type StructuredOutputStrategy = (typeof structuredOutputStrategies)[number];

export interface CallSettings {
  topP?: number;
  topK?: number;
  seed?: number;
  stopSequences?: string[];
  presencePenalty?: number;
  frequencyPenalty?: number;
}

/** A model's tool call, in griptape's ToolAction terms. */
export interface ToolCall {
  /** The provider's call id. */
  tag: string;
  name: string;
  path?: string;
  input: JsonObject;
}

/** The reply's content, in order: text items and tool calls. */
export type ReplyPart = { kind: "text"; text: string } | { kind: "tool-call"; call: ToolCall };

export interface ChatUsage {
  inputTokens: number;
  outputTokens: number;
}

export interface ChatReply {
  parts: ReplyPart[];
  usage: ChatUsage;
}

/** A streamed piece of the reply; `index` is the content item it belongs to, as griptape groups deltas. */
export type ReplyDelta =
  | { kind: "text"; text: string; index: number }
  | { kind: "tool-call"; index: number; tag?: string; name?: string; path?: string; partialInput?: string };

export interface ChatBackend {
  id: string;
  reply(call: ChatCall): Promise<ChatReply>;
  /** Calls onDelta per delta, awaited in order; resolves with the usage once the model finished. */
  stream(call: ChatCall, onDelta: (delta: ReplyDelta) => Promise<void>): Promise<ChatUsage>;
}
