import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { unavailable } from "@loom/contracts/errors";
import { type EmbeddingModel, embed } from "ai";
import type { EmbeddingSettings } from "../embedding-models.ts";

/** Embeds one text with a knowledge base's model (`provider:model`, checked at start by embeddingModelNames). */
export type EmbedText = (modelName: string, text: string) => Promise<Float32Array>;

function embeddingModel(name: string, settings: EmbeddingSettings): EmbeddingModel {
  const colon = name.indexOf(":");
  const provider = name.slice(0, colon);
  const model = name.slice(colon + 1);
  // Keys are passed explicitly: the SDK would otherwise read process.env behind the settings' back.
  if (provider === "openai")
    return createOpenAI({ apiKey: settings.OPENAI_API_KEY, baseURL: settings.OPENAI_BASE_URL || undefined }).embedding(
      model,
    );
  return createOpenAICompatible({
    name: "openai-compatible",
    baseURL: settings.OPENAI_COMPATIBLE_BASE_URL ?? "",
    apiKey: settings.OPENAI_COMPATIBLE_API_KEY || undefined,
  }).embeddingModel(model);
}

/**
 * Embeds through the AI SDK with the providers' settings. A provider that fails (down, refusing the key) is
 * UNAVAILABLE naming the model: a query cannot be answered as asked, and answering by keywords alone would
 * silently change what it finds.
 */
export function aiSdkEmbedder(settings: EmbeddingSettings): EmbedText {
  return async (modelName, text) => {
    try {
      const { embedding } = await embed({ model: embeddingModel(modelName, settings), value: text, maxRetries: 1 });
      return Float32Array.from(embedding);
    } catch (error) {
      throw unavailable(`the embedding model ${modelName} could not embed the query: ${(error as Error).message}`);
    }
  };
}
