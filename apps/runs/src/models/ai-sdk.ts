import type { JsonObject } from "@bufbuild/protobuf";
import {
  generateText,
  InvalidToolInputError,
  jsonSchema,
  type LanguageModel,
  type LanguageModelUsage,
  type ModelMessage,
  Output,
  type SystemModelMessage,
  streamText,
  type ToolSet,
  tool,
} from "ai";
import { aiSdkTelemetry } from "./ai-sdk-telemetry.ts";
import { validatedSchema } from "./json-schema-output.ts";
import type { GenerateRequest, GenerateResult, Model, ModelTool, ModelTurn, ToolCall, ToolCallDelta } from "./port.ts";
import { ModelFailure } from "./port.ts";
import { classifyProviderError } from "./provider-errors.ts";

export interface AiSdkModelOptions {
  /** `provider:model`, as configured. */
  id: string;
  model: LanguageModel;
  /**
   * Retries of a failed call (connection, 408, 429, 5xx) before the run is
   * ERROR. The SDK backs off 2 s, 4 s, … unless the provider sends Retry-After.
   */
  maxRetries?: number;
}

/** A model served through the Vercel AI SDK (OpenAI, Anthropic, any OpenAI-compatible endpoint). */
export function createAiSdkModel({ id, model, maxRetries = 2 }: AiSdkModelOptions): Model {
  return {
    id,
    async generate({
      messages,
      signal,
      onChunk,
      outputSchema,
      tools,
      onToolCallDelta,
    }: GenerateRequest): Promise<GenerateResult> {
      signal.throwIfAborted();
      const prompt = {
        ...toPrompt(messages),
        // One model call: the run's agent loop executes the calls itself (agent-loop.ts), so these have no `execute`.
        ...(tools && tools.length > 0 ? { tools: toolSet(tools) } : {}),
        model,
        maxRetries,
        telemetry: aiSdkTelemetry("loom-run"),
        // The provider's JSON-schema mode (`response_format: json_schema` on OpenAI and compatible endpoints).
        ...(outputSchema ? { output: Output.object({ schema: validatedSchema(outputSchema) }) } : {}),
      };
      // Our own controller too, so that leaving early (onChunk threw) also
      // closes the provider connection instead of leaving it to run out.
      const local = new AbortController();
      const abortSignal = AbortSignal.any([signal, local.signal]);
      try {
        if (!onChunk) {
          const result = await generateText({ ...prompt, abortSignal });
          if (result.finishReason === "content-filter") throw refused();
          return { text: result.text, ...calledTools(result.toolCalls.map(toolCall)), ...tokens(result.usage) };
        }
        const streamed = streamText({ ...prompt, abortSignal, onError: () => {} });
        const answer = await stream(streamed, { onChunk, onToolCallDelta }, signal);
        // Checked against the schema once whole, as generateText checks it (already streamed text stays).
        if (outputSchema) await streamed.output;
        return answer;
      } catch (error) {
        // A cancel must stay a cancel, whatever shape the SDK gave it (an
        // AbortError, a RetryError with reason "abort", an error part…).
        if (signal.aborted) throw signal.reason;
        if (error instanceof ModelFailure) throw error;
        if (error instanceof CallbackError) throw error.cause;
        throw classifyProviderError(error);
      } finally {
        local.abort();
      }
    },
  };
}

/**
 * Reads the full stream rather than the result's promises: the SDK reports
 * provider errors as `error` parts and a cancel as an `abort` part (the stream
 * itself ends normally), and the `finish` part carries the usage.
 */
async function stream(
  result: ReturnType<typeof streamText>,
  callbacks: {
    onChunk: (token: string) => void | Promise<void>;
    onToolCallDelta: ((delta: ToolCallDelta) => void | Promise<void>) | undefined;
  },
  signal: AbortSignal,
): Promise<GenerateResult> {
  let text = "";
  const toolCalls: ToolCall[] = [];
  let usage: LanguageModelUsage | undefined;
  let filtered = false;
  let failure: unknown;
  let failed = false;
  const callback = async (work: () => void | Promise<void>) => {
    try {
      await work();
    } catch (error) {
      throw new CallbackError(error);
    }
  };
  // As griptape indexes a streamed message's contents: the text (once it starts) one, each tool call the next.
  let next = 0;
  let textStarted = false;
  const calls = new Map<string, { index: number; inputSent: boolean }>();
  const onToolCallDelta = callbacks.onToolCallDelta ?? (() => {});
  for await (const part of result.stream) {
    if (part.type === "text-delta") {
      if (part.text === "") continue;
      text += part.text;
      if (!textStarted) {
        textStarted = true;
        next++;
      }
      await callback(() => callbacks.onChunk(part.text));
    } else if (part.type === "tool-input-start") {
      const entry = { index: next++, inputSent: false };
      calls.set(part.id, entry);
      await callback(() => onToolCallDelta({ id: part.id, index: entry.index, name: part.toolName }));
    } else if (part.type === "tool-input-delta") {
      const entry = calls.get(part.id);
      if (!entry || part.delta === "") continue;
      entry.inputSent = true;
      await callback(() => onToolCallDelta({ id: part.id, index: entry.index, partialInput: part.delta }));
    } else if (part.type === "tool-call") {
      toolCalls.push(toolCall(part));
      // A provider that sends the call whole, without input deltas: one piece, the whole input.
      const entry = calls.get(part.toolCallId);
      if (entry?.inputSent) continue;
      const index = entry?.index ?? next++;
      const head = entry ? {} : { name: part.toolName };
      await callback(() =>
        onToolCallDelta({ id: part.toolCallId, index, ...head, partialInput: JSON.stringify(part.input ?? {}) }),
      );
    } else if (part.type === "finish") {
      usage = part.totalUsage;
      filtered = part.finishReason === "content-filter";
    } else if (part.type === "error" && !failed) {
      failed = true;
      failure = part.error;
    }
  }
  signal.throwIfAborted();
  if (failed) throw failure;
  if (filtered) throw refused();
  if (usage === undefined) {
    throw new ModelFailure("error", "ProviderInvalidResponse", "the model provider's stream ended without finishing");
  }
  return { text, ...calledTools(toolCalls), ...tokens(usage) };
}

/** The run's tools as the SDK takes them: without `execute` (agent-loop.ts executes the calls). */
function toolSet(tools: ModelTool[]): ToolSet {
  return Object.fromEntries(
    tools.map((t) => [t.name, tool({ description: t.description, inputSchema: jsonSchema(t.inputSchema) })]),
  );
}

/** `toolCalls` only when the model called some: an answer is the text alone. */
const calledTools = (toolCalls: ToolCall[]) => (toolCalls.length > 0 ? { toolCalls } : {});

/** A call the SDK could not parse comes with `invalid` and its error: kept, with why (a name it does not know is the loop's to report). */
function toolCall(call: {
  toolCallId: string;
  toolName: string;
  input: unknown;
  invalid?: boolean;
  error?: unknown;
}): ToolCall {
  const input = call.input;
  const object = typeof input === "object" && input !== null && !Array.isArray(input);
  const unreadable = call.invalid === true && InvalidToolInputError.isInstance(call.error);
  return {
    id: call.toolCallId,
    name: call.toolName,
    input: object ? (input as JsonObject) : {},
    ...(unreadable ? { inputError: (call.error as Error).message } : {}),
  };
}

/**
 * The provider's content filter stopped the answer: a refusal, so the run is
 * FAILED, even though the call itself succeeded (text already streamed stays
 * in the run's events).
 */
function refused(): ModelFailure {
  return new ModelFailure("failed", "ProviderRefused", "the model provider's content filter stopped the answer");
}

/** The caller's own error from onChunk: passed through untouched, it is no provider failure. */
class CallbackError extends Error {
  constructor(cause: unknown) {
    super("onChunk failed", { cause });
  }
}

/**
 * The SDK takes system turns as `instructions` (it refuses them among the
 * messages unless told otherwise); they lead the prompt, as the assistant's
 * instructions do in a run's conversation. Earlier tool calls and their
 * results become the SDK's tool-call parts and tool message; a failed call's
 * result is an error result (Anthropic's `is_error`).
 */
function toPrompt(turns: ModelTurn[]): { instructions?: SystemModelMessage[]; messages: ModelMessage[] } {
  const instructions: SystemModelMessage[] = [];
  const messages: ModelMessage[] = [];
  for (const turn of turns) {
    if (turn.role === "system") instructions.push({ role: "system", content: turn.content });
    else if (turn.role === "tool")
      messages.push({
        role: "tool",
        content: turn.results.map((r) => ({
          type: "tool-result",
          toolCallId: r.callId,
          toolName: r.name,
          output: { type: r.isError ? "error-text" : "text", value: r.text },
        })),
      });
    else if ("toolCalls" in turn)
      messages.push({
        role: "assistant",
        content: [
          ...(turn.content === "" ? [] : [{ type: "text" as const, text: turn.content }]),
          ...turn.toolCalls.map((c) => ({
            type: "tool-call" as const,
            toolCallId: c.id,
            toolName: c.name,
            input: c.input,
          })),
        ],
      });
    else messages.push({ role: turn.role, content: turn.content });
  }
  return instructions.length > 0 ? { instructions, messages } : { messages };
}

/** Providers that report no usage count as 0 rather than failing a run that succeeded. */
function tokens(usage: LanguageModelUsage): { inputTokens: number; outputTokens: number } {
  return { inputTokens: usage.inputTokens ?? 0, outputTokens: usage.outputTokens ?? 0 };
}
