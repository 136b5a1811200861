import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { EmbeddingModel, LanguageModel } from "ai";
import type { EmbeddingSettings } from "./embedding-models.ts";

/**
 * The AI SDK models of the knowledge service, by checked `provider:model` names (embeddingModelNames,
 * searchModel). Imported on first use, so that a knowledge service without models never loads the SDK
 * (docs/decisions.md, "Loading only what is used"). Keys are passed explicitly: the SDK would otherwise read
 * process.env behind the settings' back.
 */
function provider(name: string, settings: EmbeddingSettings) {
  const colon = name.indexOf(":");
  const model = name.slice(colon + 1);
  const given = (value: string | undefined) => (value?.trim() ? value : undefined);
  if (name.slice(0, colon) === "openai")
    return {
      model,
      provider: createOpenAI({ apiKey: settings.OPENAI_API_KEY, baseURL: given(settings.OPENAI_BASE_URL) }),
    };
  return {
    model,
    provider: createOpenAICompatible({
      name: "openai-compatible",
      baseURL: settings.OPENAI_COMPATIBLE_BASE_URL ?? "",
      apiKey: given(settings.OPENAI_COMPATIBLE_API_KEY),
    }),
  };
}

export function embeddingModel(name: string, settings: EmbeddingSettings): EmbeddingModel {
  const { provider: of, model } = provider(name, settings);
  return of.embeddingModel(model);
}

export function languageModel(name: string, settings: EmbeddingSettings): LanguageModel {
  const { provider: of, model } = provider(name, settings);
  return of(model);
}
