import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { LanguageModel } from "ai";

/** A provider's connection, its settings already checked by resolve.ts. */
export type ProviderConnection =
  | { provider: "openai" | "anthropic"; apiKey: string; baseURL: string | undefined }
  | { provider: "openai-compatible"; apiKey: string | undefined; baseURL: string };

/**
 * The AI SDK model `model` of a provider. Loaded by resolve.ts on a model's first call, so that a process whose runs
 * all use loom:echo never loads the SDK. Keys are passed explicitly: the SDK would otherwise read process.env behind
 * the config's back.
 */
export function languageModel(connection: ProviderConnection, model: string): LanguageModel {
  switch (connection.provider) {
    case "openai":
      return createOpenAI({ apiKey: connection.apiKey, baseURL: connection.baseURL })(model);
    case "anthropic":
      return createAnthropic({ apiKey: connection.apiKey, baseURL: connection.baseURL })(model);
    case "openai-compatible":
      return createOpenAICompatible({
        name: "openai-compatible",
        baseURL: connection.baseURL,
        apiKey: connection.apiKey,
        // Asks for the final usage chunk of a stream (`stream_options.include_usage`);
        // without it a streamed run would report 0 tokens.
        includeUsage: true,
        // Chat's structured output ("native" strategy) sends the output schema
        // as `response_format: json_schema`, which vLLM, Ollama and LiteLLM
        // understand; without it the SDK sends only `json_object`.
        supportsStructuredOutputs: true,
      })(model);
  }
}
