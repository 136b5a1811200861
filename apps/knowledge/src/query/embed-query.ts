import { unavailable } from "@loom/contracts/errors";
import { loadOnce } from "@loom/runtime/load-once";
import type { EmbeddingSettings } from "../embedding-models.ts";

/** Embeds one text with a knowledge base's model (`provider:model`, checked at start by embeddingModelNames). */
export type EmbedText = (modelName: string, text: string) => Promise<Float32Array>;

/**
 * Embeds through the AI SDK with the providers' settings. A provider that fails (down, refusing the key) is
 * UNAVAILABLE naming the model: a query cannot be answered as asked, and answering by keywords alone would
 * silently change what it finds.
 */
export function aiSdkEmbedder(settings: EmbeddingSettings): EmbedText {
  // Loaded on the first query of a knowledge base with a model (docs/decisions.md, "Loading only what is used").
  const sdk = loadOnce(() => Promise.all([import("ai"), import("../providers.ts")]));
  return async (modelName, text) => {
    const [{ embed }, { embeddingModel }] = await sdk();
    try {
      const { embedding } = await embed({ model: embeddingModel(modelName, settings), value: text, maxRetries: 1 });
      return Float32Array.from(embedding);
    } catch (error) {
      throw unavailable(`the embedding model ${modelName} could not embed the query: ${(error as Error).message}`);
    }
  };
}
