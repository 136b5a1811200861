import {
  generateText,
  type LanguageModel,
  type LanguageModelUsage,
  type ModelMessage,
  Output,
  type SystemModelMessage,
  streamText,
} from "ai";
import { aiSdkTelemetry } from "./ai-sdk-telemetry.ts";
import { validatedSchema } from "./json-schema-output.ts";
import type { ChatTurn, GenerateRequest, GenerateResult, Model } from "./port.ts";
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
    async generate({ messages, signal, onChunk, outputSchema }: GenerateRequest): Promise<GenerateResult> {
      signal.throwIfAborted();
      const prompt = {
        ...toPrompt(messages),
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
          return { text: result.text, ...tokens(result.usage) };
        }
        const streamed = streamText({ ...prompt, abortSignal, onError: () => {} });
        const answer = await stream(streamed, onChunk, signal);
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
  onChunk: (token: string) => void | Promise<void>,
  signal: AbortSignal,
): Promise<GenerateResult> {
  let text = "";
  let usage: LanguageModelUsage | undefined;
  let filtered = false;
  let failure: unknown;
  let failed = false;
  for await (const part of result.stream) {
    if (part.type === "text-delta") {
      if (part.text === "") continue;
      text += part.text;
      try {
        await onChunk(part.text);
      } catch (error) {
        throw new CallbackError(error);
      }
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
  return { text, ...tokens(usage) };
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
 * instructions do in a run's conversation.
 */
function toPrompt(turns: ChatTurn[]): { instructions?: SystemModelMessage[]; messages: ModelMessage[] } {
  const instructions = turns
    .filter((turn) => turn.role === "system")
    .map((turn): SystemModelMessage => ({ role: "system", content: turn.content }));
  const messages = turns.flatMap((turn): ModelMessage[] =>
    turn.role === "system" ? [] : [{ role: turn.role, content: turn.content }],
  );
  return instructions.length > 0 ? { instructions, messages } : { messages };
}

/** Providers that report no usage count as 0 rather than failing a run that succeeded. */
function tokens(usage: LanguageModelUsage): { inputTokens: number; outputTokens: number } {
  return { inputTokens: usage.inputTokens ?? 0, outputTokens: usage.outputTokens ?? 0 };
}
