import type { JsonObject } from "@bufbuild/protobuf";
import { generateText, InvalidPromptError, type LanguageModel, type LanguageModelUsage, Output, streamText } from "ai";
import { aiSdkTelemetry } from "../models/ai-sdk-telemetry.ts";
import { validatedSchema } from "../models/json-schema-output.ts";
import { ModelFailure } from "../models/port.ts";
import { classifyProviderError } from "../models/provider-errors.ts";
import type { ChatBackend, ChatCall, ChatUsage, ReplyDelta, ReplyPart } from "./port.ts";
import { toPrompt, toToolSet } from "./prompt.ts";
import { toolActionName } from "./tool-names.ts";

/**
 * Chat through the AI SDK. Failures come out as ModelFailure (the service maps
 * them to Connect codes); a cancel stays the signal's reason.
 */
export function createAiSdkChat({
  id,
  model,
  maxRetries = 2,
}: {
  id: string;
  model: LanguageModel;
  maxRetries?: number;
}): ChatBackend {
  function request(call: ChatCall) {
    const native = call.outputSchema !== undefined && call.structuredOutputStrategy === "native";
    return {
      model,
      maxRetries,
      telemetry: aiSdkTelemetry("loom-chat"),
      ...toPrompt(call.messages),
      ...toToolSet(call),
      ...(native ? { output: Output.object({ schema: validatedSchema(call.outputSchema as JsonObject) }) } : {}),
      ...(call.maxTokens !== undefined ? { maxOutputTokens: call.maxTokens } : {}),
      ...(call.temperature !== undefined ? { temperature: call.temperature } : {}),
      ...call.settings,
      abortSignal: call.signal,
    };
  }

  async function guarded<T>(call: ChatCall, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (call.signal.aborted) throw call.signal.reason;
      if (error instanceof ModelFailure || error instanceof DeltaConsumerError)
        throw error instanceof DeltaConsumerError ? error.cause : error;
      // A conversation the SDK cannot turn into a prompt (an empty message…) is the request's fault.
      if (InvalidPromptError.isInstance(error))
        throw new ModelFailure(
          "failed",
          "InvalidPrompt",
          `the conversation cannot be sent to the model: ${error.message}`,
          { cause: error },
        );
      throw classifyProviderError(error);
    }
  }

  return {
    id,
    reply: (call) =>
      guarded(call, async () => {
        const result = await generateText(request(call));
        if (result.finishReason === "content-filter") throw refused();
        const parts: ReplyPart[] = result.text === "" ? [] : [{ kind: "text", text: result.text }];
        for (const toolCall of result.toolCalls) {
          parts.push({
            kind: "tool-call",
            call: {
              tag: toolCall.toolCallId,
              ...toolActionName(toolCall.toolName, call.tools),
              input: asObject(toolCall.input),
            },
          });
        }
        return { parts, usage: tokens(result.usage) };
      }),
    stream: (call, onDelta) =>
      guarded(call, async () => {
        const result = streamText({ ...request(call), onError: () => {} });
        // griptape groups deltas by index into content items: the text gets
        // one, each tool call the next.
        let next = 0;
        let textIndex: number | undefined;
        const callIndex = new Map<string, { index: number; inputSent: boolean }>();
        const emit = async (delta: ReplyDelta) => {
          try {
            await onDelta(delta);
          } catch (error) {
            throw new DeltaConsumerError(error);
          }
        };
        let usage: LanguageModelUsage | undefined;
        let failure: { error: unknown } | undefined;
        let filtered = false;
        for await (const part of result.stream) {
          if (part.type === "text-delta") {
            if (part.text === "") continue;
            textIndex ??= next++;
            await emit({ kind: "text", text: part.text, index: textIndex });
          } else if (part.type === "tool-input-start") {
            const entry = { index: next++, inputSent: false };
            callIndex.set(part.id, entry);
            await emit({
              kind: "tool-call",
              index: entry.index,
              tag: part.id,
              ...toolActionName(part.toolName, call.tools),
            });
          } else if (part.type === "tool-input-delta") {
            const entry = callIndex.get(part.id);
            if (!entry || part.delta === "") continue;
            entry.inputSent = true;
            await emit({ kind: "tool-call", index: entry.index, partialInput: part.delta });
          } else if (part.type === "tool-call") {
            // A provider that sends the call whole (no input deltas).
            const entry = callIndex.get(part.toolCallId);
            if (entry?.inputSent) continue;
            const index = entry?.index ?? next++;
            const head = entry ? {} : { tag: part.toolCallId, ...toolActionName(part.toolName, call.tools) };
            await emit({ kind: "tool-call", index, ...head, partialInput: JSON.stringify(part.input ?? {}) });
          } else if (part.type === "finish") {
            usage = part.totalUsage;
            filtered = part.finishReason === "content-filter";
          } else if (part.type === "error" && !failure) {
            failure = { error: part.error };
          }
        }
        call.signal.throwIfAborted();
        if (failure) throw failure.error;
        if (filtered) throw refused();
        if (!usage)
          throw new ModelFailure(
            "error",
            "ProviderInvalidResponse",
            "the model provider's stream ended without finishing",
          );
        return tokens(usage);
      }),
  };
}

/** The stream's consumer failed (the client went away): passed through, it is no provider failure. */
class DeltaConsumerError extends Error {
  constructor(cause: unknown) {
    super("delta consumer failed", { cause });
  }
}

function refused(): ModelFailure {
  return new ModelFailure("failed", "ProviderRefused", "the model provider's content filter stopped the answer");
}

function tokens(usage: LanguageModelUsage): ChatUsage {
  return { inputTokens: usage.inputTokens ?? 0, outputTokens: usage.outputTokens ?? 0 };
}

function asObject(input: unknown): JsonObject {
  return typeof input === "object" && input !== null && !Array.isArray(input) ? (input as JsonObject) : {};
}
